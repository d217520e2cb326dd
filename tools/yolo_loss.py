"""Training loss of the tiny YOLOv8-style detector: a task-aligned assigner (as YOLOv8's
TaskAlignedAssigner, simplified), BCE class loss on IoU-aware targets, CIoU box loss and
distribution focal loss (DFL) on the reg_max bins. Boxes are xyxy in network-input pixels."""

import math

import torch
import torch.nn.functional as F

from tiny_yolov8 import STRIDES, make_anchors


def box_iou(a, b, eps=1e-7):
    """Element-wise IoU of broadcastable xyxy boxes."""
    iw = (torch.minimum(a[..., 2], b[..., 2]) - torch.maximum(a[..., 0], b[..., 0])).clamp(0)
    ih = (torch.minimum(a[..., 3], b[..., 3]) - torch.maximum(a[..., 1], b[..., 1])).clamp(0)
    inter = iw * ih
    area_a = (a[..., 2] - a[..., 0]).clamp(0) * (a[..., 3] - a[..., 1]).clamp(0)
    area_b = (b[..., 2] - b[..., 0]).clamp(0) * (b[..., 3] - b[..., 1]).clamp(0)
    return inter / (area_a + area_b - inter + eps)


def box_ciou(a, b, eps=1e-7):
    """Complete IoU (IoU - centre distance term - aspect term) of matching xyxy boxes."""
    iou = box_iou(a, b, eps)
    cw = torch.maximum(a[..., 2], b[..., 2]) - torch.minimum(a[..., 0], b[..., 0])
    ch = torch.maximum(a[..., 3], b[..., 3]) - torch.minimum(a[..., 1], b[..., 1])
    c2 = cw ** 2 + ch ** 2 + eps
    rho2 = ((b[..., 0] + b[..., 2] - a[..., 0] - a[..., 2]) ** 2 +
            (b[..., 1] + b[..., 3] - a[..., 1] - a[..., 3]) ** 2) / 4
    wa, ha = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1] + eps
    wb, hb = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1] + eps
    v = (4 / math.pi ** 2) * (torch.atan(wb / hb) - torch.atan(wa / ha)) ** 2
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)


@torch.no_grad()
def assign(pd_scores, pd_boxes, anchors_px, gt_labels, gt_boxes, gt_mask, nc, topk=10, alpha=0.5, beta=6.0,
           eps=1e-9):
    """Task-aligned assignment. pd_scores [B, N, nc] (sigmoid), pd_boxes [B, N, 4] px, anchors_px
    [N, 2], gt_labels [B, M] long, gt_boxes [B, M, 4] px, gt_mask [B, M] bool.
    Returns target boxes [B, N, 4] px, target scores [B, N, nc], foreground mask [B, N]."""
    B, N, _ = pd_scores.shape
    M = gt_boxes.shape[1]
    if M == 0:
        return (torch.zeros_like(pd_boxes), torch.zeros_like(pd_scores),
                torch.zeros(B, N, dtype=torch.bool))
    # Candidate anchors: centre strictly inside the box.
    lt = anchors_px[None, None] - gt_boxes[:, :, None, :2]
    rb = gt_boxes[:, :, None, 2:] - anchors_px[None, None]
    in_gt = (torch.cat((lt, rb), -1).amin(-1) > eps) & gt_mask[:, :, None]  # [B, M, N]

    ious = box_iou(gt_boxes[:, :, None, :], pd_boxes[:, None, :, :]).clamp(0) * in_gt
    scores = pd_scores.gather(2, gt_labels[:, None, :].expand(B, N, M)).permute(0, 2, 1)  # [B, M, N]
    align = scores.pow(alpha) * ious.pow(beta) * in_gt

    # The top-k aligned anchors of each box (only among candidates).
    k = min(topk, N)
    top_idx = align.topk(k, dim=-1).indices
    pos = torch.zeros_like(align).scatter_(-1, top_idx, 1.0) * in_gt  # [B, M, N]
    # An anchor claimed by several boxes goes to the one it overlaps most.
    claims = pos.sum(1)
    if claims.max() > 1:
        best = F.one_hot(ious.argmax(1), M).permute(0, 2, 1).to(pos.dtype)
        pos = torch.where((claims > 1)[:, None, :], best, pos)
    fg = pos.sum(1) > 0  # [B, N]
    gt_idx = pos.argmax(1)  # [B, N]

    target_labels = gt_labels.gather(1, gt_idx)
    target_boxes = gt_boxes.gather(1, gt_idx[..., None].expand(B, N, 4))
    target_scores = F.one_hot(target_labels, nc).float() * fg[..., None]
    # Soft targets: the alignment normalised per box so its best anchor gets that anchor's IoU.
    align = align * pos
    norm = (align * (ious * pos).amax(-1, keepdim=True) / (align.amax(-1, keepdim=True) + eps)).amax(1)
    return target_boxes, target_scores * norm[..., None], fg


class DetectionLoss:
    def __init__(self, nc, reg_max, imgsz_hw, box_gain=7.5, cls_gain=0.5, dfl_gain=1.5):
        self.nc, self.reg_max = nc, reg_max
        h, w = imgsz_hw
        anchors, strides = make_anchors([(h // s, w // s) for s in STRIDES], STRIDES)
        self.anchors, self.strides = anchors, strides  # grid units [N, 2], [N, 1]
        self.proj = torch.arange(reg_max, dtype=torch.float)
        self.gains = (box_gain, cls_gain, dfl_gain)

    def decode(self, distri):
        """[B, N, 4 * reg_max] logits -> xyxy boxes in grid units."""
        B, N, _ = distri.shape
        d = distri.view(B, N, 4, self.reg_max).softmax(3).matmul(self.proj)
        return torch.cat((self.anchors - d[..., :2], self.anchors + d[..., 2:]), -1)

    def __call__(self, feats, gt_labels, gt_boxes, gt_mask):
        B = feats[0].shape[0]
        no = self.nc + 4 * self.reg_max
        pred = torch.cat([f.view(B, no, -1) for f in feats], 2).permute(0, 2, 1)  # [B, N, no]
        distri, logits = pred.split((4 * self.reg_max, self.nc), -1)
        boxes = self.decode(distri)  # grid units

        target_boxes, target_scores, fg = assign(
            logits.detach().sigmoid(), (boxes.detach() * self.strides).type(gt_boxes.dtype),
            self.anchors * self.strides, gt_labels, gt_boxes, gt_mask, self.nc)
        score_sum = target_scores.sum().clamp(min=1)

        loss_cls = F.binary_cross_entropy_with_logits(logits, target_scores, reduction="none").sum() / score_sum
        loss_box = torch.zeros(())
        loss_dfl = torch.zeros(())
        if fg.any():
            weight = target_scores.sum(-1)[fg]
            tb = target_boxes / self.strides  # grid units
            loss_box = ((1.0 - box_ciou(boxes[fg], tb[fg])) * weight).sum() / score_sum
            anchors = self.anchors.expand(B, -1, -1)[fg]
            ltrb = torch.cat((anchors - tb[fg][:, :2], tb[fg][:, 2:] - anchors), -1).clamp(0, self.reg_max - 1.01)
            left = ltrb.long()
            wl = left + 1 - ltrb
            d = distri[fg].reshape(-1, self.reg_max)
            ce_l = F.cross_entropy(d, left.view(-1), reduction="none").view(left.shape)
            ce_r = F.cross_entropy(d, (left + 1).view(-1), reduction="none").view(left.shape)
            loss_dfl = ((ce_l * wl + ce_r * (1 - wl)).mean(-1) * weight).sum() / score_sum
        g_box, g_cls, g_dfl = self.gains
        total = g_box * loss_box + g_cls * loss_cls + g_dfl * loss_dfl
        return total, (loss_box.item(), loss_cls.item(), loss_dfl.item(), int(fg.sum()))

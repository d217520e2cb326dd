"""A tiny YOLOv8-style detector: the same building blocks, head format and ONNX operators as
Ultralytics YOLOv8 (Conv+BN+SiLU, C2f with Split, SPPF with MaxPool, nearest Upsample + Concat
PAN neck, decoupled head with a DFL box branch), only narrower. Used by train_tiny_detector.py.

Inference output, as Ultralytics exports it: [1, 4 + nc, N] with rows cx, cy, w, h in input
pixels, then nc sigmoid class scores (no objectness); N = sum over strides 8/16/32 of (H/s)*(W/s).
"""

import math

import torch
import torch.nn as nn

STRIDES = (8, 16, 32)


class Conv(nn.Module):
    """Conv2d (no bias) + BatchNorm + SiLU, as ultralytics.nn.modules.Conv."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """CSP bottleneck with 2 convolutions (YOLOv8): split, n bottlenecks, concat all."""

    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1)
        self.cv2 = Conv(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class DFL(nn.Module):
    """Distribution focal loss integral: softmax over reg_max bins, then a fixed 1x1 conv with
    weights 0..reg_max-1 (the expected distance), exactly as Ultralytics exports it."""

    def __init__(self, reg_max=16):
        super().__init__()
        self.reg_max = reg_max
        self.conv = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(reg_max, dtype=torch.float).view(1, reg_max, 1, 1)

    def forward(self, x):
        # x: [b, 4 * reg_max, a]. Fixed batch 1 and -1 anchors keep the Reshape shapes constant.
        if torch.onnx.is_in_onnx_export():
            b, a = 1, -1
        else:
            b, a = x.shape[0], x.shape[2]
        return self.conv(x.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def make_anchors(shapes, strides, offset=0.5):
    """Anchor centres (grid units) and strides for feature maps of the given (h, w)."""
    points, stride_list = [], []
    for (h, w), s in zip(shapes, strides):
        sy, sx = torch.meshgrid(torch.arange(h, dtype=torch.float) + offset,
                                torch.arange(w, dtype=torch.float) + offset, indexing="ij")
        points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_list.append(torch.full((h * w, 1), float(s)))
    return torch.cat(points), torch.cat(stride_list)


class Detect(nn.Module):
    def __init__(self, nc, ch, reg_max=16, c_box=32, c_cls=32):
        super().__init__()
        self.nc, self.reg_max, self.no = nc, reg_max, nc + 4 * reg_max
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(c, c_box, 3), Conv(c_box, c_box, 3),
                                               nn.Conv2d(c_box, 4 * reg_max, 1)) for c in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(c, c_cls, 3), Conv(c_cls, c_cls, 3),
                                               nn.Conv2d(c_cls, nc, 1)) for c in ch)
        self.dfl = DFL(reg_max)
        self.anchor_cache = None  # (shapes, anchors, strides)

    def init_bias(self, imgsz):
        """Ultralytics' prior: box logits 1, class logits for ~5 objects per 640 image."""
        for a, b, s in zip(self.cv2, self.cv3, STRIDES):
            a[-1].bias.data[:] = 1.0
            b[-1].bias.data[: self.nc] = math.log(5 / self.nc / (imgsz / s) ** 2)

    def forward(self, feats):
        x = [torch.cat((self.cv2[i](f), self.cv3[i](f)), 1) for i, f in enumerate(feats)]
        if self.training:
            return x
        return self.decode(x)

    def decode(self, x):
        shapes = [tuple(xi.shape[2:]) for xi in x]
        if self.anchor_cache is None or self.anchor_cache[0] != shapes:
            anchors, strides = make_anchors(shapes, STRIDES)
            # Strides as a full [1, 4, N] constant: OpenCV 4.6 cannot broadcast a [1, N] or [1, 1, N]
            # constant over the channel axis of a 3-D Mul (Ultralytics exports need OpenCV >= 4.7).
            self.anchor_cache = (shapes, anchors.transpose(0, 1).unsqueeze(0),
                                 strides.transpose(0, 1).unsqueeze(0).repeat(1, 4, 1).contiguous())
        _, anchors, strides = self.anchor_cache
        if anchors.device != x[0].device or anchors.dtype != x[0].dtype:
            # Made on the CPU in float32: moved once to where the model runs (the first GPU run of
            # tools/torch_bench.py failed with the anchors on the CPU). Export never gets here.
            anchors, strides = anchors.to(x[0].device, x[0].dtype), strides.to(x[0].device, x[0].dtype)
            self.anchor_cache = (shapes, anchors, strides)
        b = x[0].shape[0] if not torch.onnx.is_in_onnx_export() else 1
        return self.decode_with(x, anchors, strides, b)

    def decode_with(self, x, anchors, strides, b):
        """Boxes (cx, cy, w, h in input pixels) and class scores from the heads' maps, given the
        anchor centres [1, 2, N] and strides (broadcast over the 4 box rows)."""
        x_cat = torch.cat([xi.view(b, self.no, -1) for xi in x], 2)
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        dist = self.dfl(box)
        lt, rb = dist[:, :2], dist[:, 2:]
        x1y1 = anchors - lt
        x2y2 = anchors + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)


class TinyYoloV8(nn.Module):
    # Channel widths per stage: stride 2, 4, 8, 16, 32.
    def __init__(self, nc, widths=(16, 32, 48, 64, 96), reg_max=16, c_head=32):
        super().__init__()
        w0, w1, w2, w3, w4 = widths
        self.stem = Conv(3, w0, 3, 2)
        self.stage1 = nn.Sequential(Conv(w0, w1, 3, 2), C2f(w1, w1, 1, True))
        self.stage2 = nn.Sequential(Conv(w1, w2, 3, 2), C2f(w2, w2, 1, True))   # P3
        self.stage3 = nn.Sequential(Conv(w2, w3, 3, 2), C2f(w3, w3, 1, True))   # P4
        self.stage4 = nn.Sequential(Conv(w3, w4, 3, 2), C2f(w4, w4, 1, True), SPPF(w4, w4))  # P5
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.top_down4 = C2f(w4 + w3, w3)
        self.top_down3 = C2f(w3 + w2, w2)
        self.down3 = Conv(w2, w2, 3, 2)
        self.bottom_up4 = C2f(w2 + w3, w3)
        self.down4 = Conv(w3, w3, 3, 2)
        self.bottom_up5 = C2f(w3 + w4, w4)
        self.detect = Detect(nc, (w2, w3, w4), reg_max, c_head, c_head)

    def forward(self, x):
        p3 = self.stage2(self.stage1(self.stem(x)))
        p4 = self.stage3(p3)
        p5 = self.stage4(p4)
        n4 = self.top_down4(torch.cat((self.up(p5), p4), 1))
        o3 = self.top_down3(torch.cat((self.up(n4), p3), 1))
        o4 = self.bottom_up4(torch.cat((self.down3(o3), n4), 1))
        o5 = self.bottom_up5(torch.cat((self.down4(o4), p5), 1))
        return self.detect([o3, o4, o5])

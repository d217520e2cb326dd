#!/usr/bin/python3
"""Trains streamdet's own tiny detector on synthetic scenes and exports it as a YOLOv8-format ONNX.

  /usr/bin/python3 tools/train_tiny_detector.py --synth build/tools/streamdet_synth \
      --out models/tiny_synth_v8.onnx

Steps: (1) render training frames with `streamdet_synth frames` (independent random scenes of
several frame sizes), (2) letterbox them to the network size, JPEG-recompress half of them (video
codecs blur and block), (3) train TinyYoloV8 with a task-aligned assigner + CIoU/DFL/BCE loss on
CPU, (4) export ONNX opset 12 with Ultralytics-style metadata, fixed input size (OpenCV 4.6 cannot
run the Range/Shape ops a dynamic-size head needs), (5) check OpenCV DNN gives torch's outputs,
(6) score the model through OpenCV DNN on fresh clips (seeds never used for training) with
`streamdet_synth eval`: precision and recall at IoU 0.5.

Needs the Debian python (torch 1.13, onnx 1.12, cv2 4.6); run it with /usr/bin/python3.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import cv2
import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_yolov8 import STRIDES, TinyYoloV8  # noqa: E402
from yolo_loss import DetectionLoss  # noqa: E402

CLASS_NAMES = ["disc", "square", "triangle", "cross"]  # src/synthetic/scene.cpp class_names()
PAD_VALUE = 114


def log(*args):
    print(*args, flush=True)


def letterbox(img, dst_w, dst_h):
    """Ultralytics LetterBox: keep aspect, centre, pad 114. Returns (image, scale, pad_x, pad_y)."""
    h, w = img.shape[:2]
    r = min(dst_w / w, dst_h / h)
    nw, nh = int(round(w * r)), int(round(h * r))
    if (nw, nh) != (w, h):
        img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    dw, dh = (dst_w - nw) / 2, (dst_h - nh) / 2
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(PAD_VALUE,) * 3)
    return img, r, left, top


# ---------------------------------------------------------------------------------------- data

def render_frames(synth, out_dir, count, seed, sizes, max_objects):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    cmd = [synth, "frames", "--out-dir", out_dir, "--count", str(count), "--seed", str(seed),
           "--sizes", sizes, "--min-objects", "1", "--max-objects", str(max_objects)]
    log("rendering:", " ".join(cmd))
    subprocess.run(cmd, check=True)


def render_clips(synth, out_dir, count, seed, size, objects, frames):
    """Tracking-like clips (`clip --motion traverse`): dense scenes where same-class objects touch,
    cross and hide one another, written through the video codec as the tracking clips are."""
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    w, h = size.split("x")
    counts = [int(c) for c in str(objects).split(",")]
    clips = []
    for k in range(count):
        video = os.path.join(out_dir, f"clip_{seed + k}.mp4")
        cmd = [synth, "clip", "--motion", "traverse", "--width", w, "--height", h, "--frames", str(frames),
               "--seed", str(seed + k), "--objects", str(counts[k % len(counts)]), "--video", video,
               "--truth", video + ".truth.jsonl"]
        if k == 0:
            log("rendering clips like:", " ".join(cmd))
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        clips.append(video)
    return clips


def letterbox_targets(img, dets, imgsz, min_visible):
    """Letterboxed image and (labels, xyxy boxes in input px) of the objects worth learning."""
    img, r, px, py = letterbox(img, imgsz[0], imgsz[1])
    labels, boxes = [], []
    for d in dets:
        x1, y1, x2, y2 = d["box"]
        # Train on what can be seen: slivers stay background (the evaluation ignores them).
        if d.get("visible", 1.0) < min_visible or x2 - x1 < 4 or y2 - y1 < 4:
            continue
        labels.append(d["class_id"])
        boxes.append([x1 * r + px, y1 * r + py, x2 * r + px, y2 * r + py])
    return img, (np.array(labels, np.int64), np.array(boxes, np.float32).reshape(-1, 4))


def load_clip_frames(clips, imgsz, every, rng, min_visible):
    """Every `every`-th frame of each clip (random phase per clip), decoded from the video."""
    images, targets = [], []
    for video in clips:
        with open(video + ".truth.jsonl") as f:
            truth = [json.loads(line) for line in f]
        phase = int(rng.integers(0, every))
        cap = cv2.VideoCapture(video, cv2.CAP_FFMPEG)
        i = 0
        while True:
            ok, bgr = cap.read()
            if not ok:
                break
            if i % every == phase and i < len(truth):
                img, t = letterbox_targets(bgr, truth[i]["detections"], imgsz, min_visible)
                images.append(img)
                targets.append(t)
            i += 1
    return images, targets


def load_dataset(data_dir, imgsz, rng, jpeg_fraction, min_visible):
    """Letterboxed BGR images [n, h, w, 3] uint8 and per-image (labels, xyxy boxes in input px)."""
    images, targets = [], []
    with open(os.path.join(data_dir, "labels.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            img = cv2.imread(os.path.join(data_dir, rec["image"]), cv2.IMREAD_COLOR)
            if rng.random() < jpeg_fraction:  # codec-like blur and blocks, at the frame's own size
                q = int(rng.integers(30, 91))
                img = cv2.imdecode(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])[1], cv2.IMREAD_COLOR)
            img, t = letterbox_targets(img, rec["detections"], imgsz, min_visible)
            images.append(img)
            targets.append(t)
    return images, targets


def make_batch(images, targets, idx, rng, hflip):
    imgs = images[idx][..., ::-1]  # BGR -> RGB
    flips = rng.random(len(idx)) < 0.5 if hflip else np.zeros(len(idx), bool)
    batch = torch.from_numpy(np.ascontiguousarray(imgs)).permute(0, 3, 1, 2).float().div_(255.0)
    w = batch.shape[3]
    if flips.any():
        f = torch.from_numpy(np.nonzero(flips)[0])
        batch[f] = batch[f].flip(3)
    M = max(1, max(len(targets[i][0]) for i in idx))
    gt_labels = torch.zeros(len(idx), M, dtype=torch.long)
    gt_boxes = torch.zeros(len(idx), M, 4)
    gt_mask = torch.zeros(len(idx), M, dtype=torch.bool)
    for b, i in enumerate(idx):
        labels, boxes = targets[i]
        n = len(labels)
        if n == 0:
            continue
        boxes = boxes.copy()
        if flips[b]:
            boxes[:, [0, 2]] = w - boxes[:, [2, 0]]
        gt_labels[b, :n] = torch.from_numpy(labels)
        gt_boxes[b, :n] = torch.from_numpy(boxes)
        gt_mask[b, :n] = True
    return batch, gt_labels, gt_boxes, gt_mask


# ------------------------------------------------------------------------------------ training

class ModelEMA:
    """Exponential moving average of the weights (Ultralytics' ModelEMA: decay ramps up)."""

    def __init__(self, model, decay=0.9999, tau=2000):
        import copy
        self.ema = copy.deepcopy(model).eval()
        for p in self.ema.parameters():
            p.requires_grad_(False)
        self.decay, self.tau, self.updates = decay, tau, 0

    @torch.no_grad()
    def update(self, model):
        self.updates += 1
        d = self.decay * (1 - np.exp(-self.updates / self.tau))
        msd = model.state_dict()
        for k, v in self.ema.state_dict().items():
            if v.dtype.is_floating_point:
                v.mul_(d).add_(msd[k].detach(), alpha=1 - d)


def train(args, images, targets, imgsz):
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = TinyYoloV8(len(CLASS_NAMES), widths=tuple(args.widths), c_head=args.head_width)
    model.detect.init_bias(max(imgsz))
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(f"model: {n_params} trainable parameters, widths {args.widths}, head {args.head_width}")

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim <= 1 else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.937, 0.999))
    criterion = DetectionLoss(len(CLASS_NAMES), model.detect.reg_max, (imgsz[1], imgsz[0]))
    ema = ModelEMA(model)

    n = len(images)
    steps_per_epoch = n // args.batch
    total_steps = steps_per_epoch * args.epochs
    warmup = min(300, total_steps // 10)
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        model.train()
        perm = rng.permutation(n)
        sums = np.zeros(4)
        for s in range(steps_per_epoch):
            idx = perm[s * args.batch:(s + 1) * args.batch]
            batch, gt_labels, gt_boxes, gt_mask = make_batch(images, targets, idx, rng, hflip=True)
            # Linear warm-up, then cosine decay to 5% of the peak rate.
            if step < warmup:
                lr = args.lr * (step + 1) / warmup
            else:
                t = (step - warmup) / max(1, total_steps - warmup)
                lr = args.lr * (0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * t)))
            for g in opt.param_groups:
                g["lr"] = lr
            loss, parts = criterion(model(batch), gt_labels, gt_boxes, gt_mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            opt.step()
            ema.update(model)
            sums += np.array(parts[:3] + (parts[3],), dtype=float)
            step += 1
        m = sums / max(1, steps_per_epoch)
        log(f"epoch {epoch + 1}/{args.epochs}: box {m[0]:.3f} cls {m[1]:.3f} dfl {m[2]:.3f} "
            f"positives/batch {m[3]:.0f} lr {lr:.5f} ({time.time() - t0:.0f} s)")
    return ema.ema, n_params, time.time() - t0


# -------------------------------------------------------------------------------------- export

def export_onnx(model, path, imgsz, opset):
    w_in, h_in = imgsz
    model.eval()
    x = torch.zeros(1, 3, h_in, w_in)
    with torch.no_grad():
        model(x)  # builds the anchor constants for this size, so the export bakes them in
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["images"], output_names=["output0"],
                      do_constant_folding=True)
    m = onnx.load(path)
    # torch shares identical initializers through Identity nodes, which OpenCV 4.6 cannot parse.
    inits = {i.name: i for i in m.graph.initializer}
    for node in list(m.graph.node):
        if node.op_type == "Identity" and node.input[0] in inits:
            t = onnx.TensorProto()
            t.CopyFrom(inits[node.input[0]])
            t.name = node.output[0]
            m.graph.initializer.append(t)
            m.graph.node.remove(node)
    meta = {
        "description": "streamdet tiny synthetic-shapes detector (YOLOv8 head format)",
        "author": "streamdet tools/train_tiny_detector.py",
        "task": "detect",
        "batch": "1",
        "stride": str(max(STRIDES)),
        "imgsz": str([h_in, w_in]),
        "names": str({i: n for i, n in enumerate(CLASS_NAMES)}),
    }
    m.producer_name = "streamdet"
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return sorted({n.op_type for n in m.graph.node})


def preprocess(bgr, imgsz):
    img, r, px, py = letterbox(bgr, imgsz[0], imgsz[1])
    blob = img[..., ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0
    return np.ascontiguousarray(blob), r, px, py


def check_opencv_matches_torch(model, path, frames, imgsz):
    net = cv2.dnn.readNetFromONNX(path)
    worst = 0.0
    for bgr in frames:
        blob, *_ = preprocess(bgr, imgsz)
        net.setInput(blob)
        out_cv = net.forward()
        with torch.no_grad():
            out_t = model(torch.from_numpy(blob)).numpy()
        assert out_cv.shape == out_t.shape, (out_cv.shape, out_t.shape)
        worst = max(worst, float(np.abs(out_cv - out_t).max()))
    return worst


# ---------------------------------------------------------------------------------- evaluation

def nms(boxes, scores, iou_thr):
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        xx1 = np.maximum(boxes[i, 0], boxes[rest, 0])
        yy1 = np.maximum(boxes[i, 1], boxes[rest, 1])
        xx2 = np.minimum(boxes[i, 2], boxes[rest, 2])
        yy2 = np.minimum(boxes[i, 3], boxes[rest, 3])
        inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
        area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
        iou = inter / (area(boxes[i]) + area(boxes[rest]) - inter + 1e-9)
        order = rest[iou <= iou_thr]
    return keep


def detect(net, bgr, imgsz, conf=0.25, iou=0.45):
    """OpenCV DNN inference + YOLOv8 decode + class-aware NMS; boxes in frame pixels."""
    blob, r, px, py = preprocess(bgr, imgsz)
    net.setInput(blob)
    out = net.forward()[0]  # [4 + nc, N]
    scores = out[4:]
    cls = scores.argmax(0)
    best = scores.max(0)
    keep = best >= conf
    cx, cy, w, h = out[:4, keep]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
    best, cls = best[keep], cls[keep]
    offset = cls[:, None].astype(np.float32) * 4096.0  # class-aware NMS in one pass
    kept = nms(boxes + offset, best, iou) if len(best) else []
    fh, fw = bgr.shape[:2]
    dets = []
    for i in kept:
        x1, y1, x2, y2 = boxes[i]
        x1, x2 = np.clip([(x1 - px) / r, (x2 - px) / r], 0, fw)
        y1, y2 = np.clip([(y1 - py) / r, (y2 - py) / r], 0, fh)
        dets.append({"box": [float(x1), float(y1), float(x2), float(y2)], "class_id": int(cls[i]),
                     "class_name": CLASS_NAMES[int(cls[i])], "confidence": float(best[i])})
    return dets


def evaluate_clip(synth, onnx_path, imgsz, work_dir, width, height, frames, seed, objects, ext):
    video = os.path.join(work_dir, f"val_{seed}_{width}x{height}{ext}")
    truth = video + ".truth.jsonl"
    dets_path = video + ".dets.jsonl"
    subprocess.run([synth, "clip", "--video", video, "--truth", truth, "--width", str(width), "--height",
                    str(height), "--frames", str(frames), "--seed", str(seed), "--objects", str(objects)],
                   check=True)
    net = cv2.dnn.readNetFromONNX(onnx_path)
    cap = cv2.VideoCapture(video, cv2.CAP_FFMPEG)
    with open(dets_path, "w") as f:
        i = 0
        while True:
            ok, bgr = cap.read()
            if not ok:
                break
            f.write(json.dumps({"source": video, "frame": i, "timestamp_ms": 1000.0 * i / 30,
                                "detections": detect(net, bgr, imgsz)}) + "\n")
            i += 1
    report = subprocess.run([synth, "eval", "--truth", truth, "--detections", dets_path],
                            check=True, capture_output=True, text=True).stdout
    total = [ln for ln in report.splitlines() if ln.startswith("all")][0].split()
    return float(total[5]), float(total[6]), report


# ---------------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synth", default="build/tools/streamdet_synth", help="the streamdet_synth executable")
    ap.add_argument("--out", default="models/tiny_synth_v8.onnx")
    ap.add_argument("--work-dir", default="/tmp/streamdet_tiny_train", help="scratch folder (training frames)")
    ap.add_argument("--imgsz", type=int, nargs=2, default=[256, 256], metavar=("W", "H"))
    ap.add_argument("--train-count", type=int, default=6000)
    ap.add_argument("--train-sizes", default="320x192,320x192,256x256,320x240,384x216,640x360")
    ap.add_argument("--data-seed", type=int, default=1000, help="seed of the training scenes")
    ap.add_argument("--max-objects", type=int, default=10, help="most objects in a random training scene")
    ap.add_argument("--clip-count", type=int, default=0,
                    help="also train on frames of this many tracking-like clips (`clip --motion traverse`)")
    ap.add_argument("--clip-seed", type=int, default=5000,
                    help="seed of the first training clip (the next ones count up; keep away from the "
                         "evaluation seeds 1-6, 11-16, 90001, 90002)")
    ap.add_argument("--clip-size", default="320x192", help="the training clips' frame size WxH")
    ap.add_argument("--clip-objects", default="60",
                    help="objects over a training clip (comma-separated: one per clip, in turn)")
    ap.add_argument("--clip-frames", type=int, default=900, help="frames of a training clip")
    ap.add_argument("--clip-every", type=int, default=6, help="train on every N-th frame of a clip")
    ap.add_argument("--seed", type=int, default=0, help="seed of initialisation, shuffling, augmentation")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.002)
    ap.add_argument("--weight-decay", type=float, default=0.0005)
    ap.add_argument("--widths", type=int, nargs=5, default=[8, 16, 32, 64, 96])
    ap.add_argument("--head-width", type=int, default=32)
    ap.add_argument("--jpeg-fraction", type=float, default=0.5)
    ap.add_argument("--min-visible", type=float, default=0.25)
    ap.add_argument("--opset", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--val-seeds", type=int, nargs="+", default=[90001, 90002])
    ap.add_argument("--keep-data", action="store_true", help="keep the rendered training frames")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    cv2.setNumThreads(args.threads)
    imgsz = tuple(args.imgsz)
    os.makedirs(args.work_dir, exist_ok=True)
    t_start = time.time()

    data_dir = os.path.join(args.work_dir, "frames")
    render_frames(args.synth, data_dir, args.train_count, args.data_seed, args.train_sizes, args.max_objects)
    images, targets = load_dataset(data_dir, imgsz, np.random.default_rng(args.seed + 1), args.jpeg_fraction,
                                   args.min_visible)
    clip_dir = os.path.join(args.work_dir, "clips")
    if args.clip_count > 0:
        clips = render_clips(args.synth, clip_dir, args.clip_count, args.clip_seed, args.clip_size,
                             args.clip_objects, args.clip_frames)
        clip_images, clip_targets = load_clip_frames(clips, imgsz, args.clip_every,
                                                     np.random.default_rng(args.seed + 2), args.min_visible)
        log(f"clips: {len(clip_images)} frames of {len(clips)} clips, "
            f"{sum(len(t[0]) for t in clip_targets)} boxes")
        images += clip_images
        targets += clip_targets
    images = np.stack(images)
    log(f"data: {len(images)} frames, {sum(len(t[0]) for t in targets)} boxes ({time.time() - t_start:.0f} s)")

    model, n_params, train_s = train(args, images, targets, imgsz)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    ops = export_onnx(model, args.out, imgsz, args.opset)
    size = os.path.getsize(args.out)
    log(f"exported {args.out}: {size} bytes, opset {args.opset}, input {imgsz[0]}x{imgsz[1]}, ops {ops}")
    with open(os.path.splitext(args.out)[0] + ".names", "w") as f:
        f.write("\n".join(CLASS_NAMES) + "\n")

    sample = [cv2.imread(os.path.join(data_dir, "images", f"{i:06d}.png")) for i in range(8)]
    diff = check_opencv_matches_torch(model, args.out, sample, imgsz)
    log(f"OpenCV {cv2.__version__} DNN vs torch on {len(sample)} frames: max abs diff {diff:.2e}")
    if diff > 1e-2:
        sys.exit(f"OpenCV output differs from torch by {diff}")

    results = []
    for seed in args.val_seeds:
        for (w, h, ext) in [(320, 192, ".mp4"), (320, 192, ".avi"), (640, 360, ".mp4")]:
            p, r, report = evaluate_clip(args.synth, args.out, imgsz, args.work_dir, w, h, 150, seed, 8, ext)
            log(f"val clip seed {seed} {w}x{h}{ext} 150 frames 8 objects: precision {p:.4f} recall {r:.4f}")
            log(report)
            results.append((p, r))
    log(f"worst precision {min(p for p, _ in results):.4f}, worst recall {min(r for _, r in results):.4f}; "
        f"training {train_s / 60:.1f} min, all {(time.time() - t_start) / 60:.1f} min, {n_params} parameters")
    if not args.keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(clip_dir, ignore_errors=True)


if __name__ == "__main__":
    main()

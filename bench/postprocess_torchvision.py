#!/usr/bin/python3
"""Peer timing for bench/postprocess_bench.cpp: the same YOLOv8 job done the usual Python way
(Ultralytics-style decode + torchvision batched_nms), on one thread.

Builds a [1, 84, 8400] head with the recipe of BM_YoloV8_DecodeNms (background class scores
sigmoid(N(-7, 1.2)), 30 objects seen by ~12 anchors each with scores 0.3..0.95), then times
  decode+nms: filter by best class score >= 0.25, xywh -> xyxy, torchvision.ops.batched_nms
              (iou 0.45), keep at most 300;
  nms only:   torchvision.ops.batched_nms on the already-filtered candidates.
Needs Debian's python3-torch and python3-torchvision. Run: /usr/bin/python3 bench/postprocess_torchvision.py
"""
import time

import numpy as np
import torch
import torchvision

torch.set_num_threads(1)
rng = np.random.default_rng(2024)


def anchor_grid():
    cx, cy, st = [], [], []
    for s in (8, 16, 32):
        n = 640 // s
        ys, xs = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        cx.append((xs.ravel() + 0.5) * s)
        cy.append((ys.ravel() + 0.5) * s)
        st.append(np.full(n * n, s, dtype=np.float64))
    return np.concatenate(cx), np.concatenate(cy), np.concatenate(st)


def yolov8_head():
    nc, anchors = 80, 8400
    cx, cy, st = anchor_grid()
    head = np.empty((4 + nc, anchors), dtype=np.float32)
    head[0], head[1], head[2], head[3] = cx, cy, 2 * st, 2 * st
    head[4:] = 1 / (1 + np.exp(-rng.normal(-7, 1.2, size=(nc, anchors))))
    for _ in range(30):
        ox, oy = 40 + rng.random() * 560, 40 + rng.random() * 560
        ow, oh = 30 + rng.random() * 200, 30 + rng.random() * 200
        cls = int(rng.random() * nc)
        near = np.nonzero((np.abs(cx - ox) <= 1.6 * st) & (np.abs(cy - oy) <= 1.6 * st))[0][:12]
        for a in near:
            head[0, a] = ox + (rng.random() - 0.5) * 0.1 * ow
            head[1, a] = oy + (rng.random() - 0.5) * 0.1 * oh
            head[2, a] = ow * (0.9 + 0.2 * rng.random())
            head[3, a] = oh * (0.9 + 0.2 * rng.random())
            head[4 + cls, a] = 0.3 + 0.65 * rng.random()
            if rng.random() < 0.3:
                head[4 + (cls + 1) % nc, a] = 0.1 + 0.3 * rng.random()
    return torch.from_numpy(head[None])


def decode_nms(pred, conf=0.25, iou=0.45, max_det=300):
    x = pred[0].T  # [8400, 84]
    scores, classes = x[:, 4:].max(1)
    keep = scores >= conf
    x, scores, classes = x[keep], scores[keep], classes[keep]
    boxes = torch.cat([x[:, :2] - x[:, 2:4] / 2, x[:, :2] + x[:, 2:4] / 2], 1)
    kept = torchvision.ops.batched_nms(boxes, scores, classes, iou)[:max_det]
    return boxes[kept], scores[kept], classes[kept], int(keep.sum())


def timeit(fn, repeat=2000):
    for _ in range(50):
        fn()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best.append((time.perf_counter() - t0) / repeat)
    return sorted(best)[2] * 1e3  # median of 5, ms


pred = yolov8_head()
_, _, _, candidates = decode_nms(pred)
kept = decode_nms(pred)[0].shape[0]
x = pred[0].T
s, c = x[:, 4:].max(1)
m = s >= 0.25
b = torch.cat([x[m][:, :2] - x[m][:, 2:4] / 2, x[m][:, :2] + x[m][:, 2:4] / 2], 1)
with torch.inference_mode():
    full = timeit(lambda: decode_nms(pred))
    nms_only = timeit(lambda: torchvision.ops.batched_nms(b, s[m], c[m], 0.45))
print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, threads {torch.get_num_threads()}")
print(f"candidates {candidates}, kept {kept}")
print(f"decode+batched_nms: {full:.3f} ms   batched_nms only: {nms_only:.3f} ms")

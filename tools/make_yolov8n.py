"""Makes a YOLOv8n-ARCHITECTURE ONNX model for benchmarks: the layer widths, depths and operators
of Ultralytics YOLOv8n (width 0.25, depth 0.33: Conv+BN+SiLU, C2f, SPPF, nearest upsample + concat
PAN neck, decoupled head with DFL, 80 classes; about 3.2M parameters and 8.7 GFLOPs at 640x640),
written from scratch with the building blocks of tools/tiny_yolov8.py, with random (seeded)
weights, exported the way Ultralytics exports it: opset 17, input "images" [batch, 3, 640, 640],
output "output0" [batch, 84, 8400] (box decode, DFL softmax and class sigmoid inside the graph),
metadata names/stride/imgsz. The batch is dynamic (as `yolo export dynamic=True` writes it, with
the size fixed): the GPU check times batches 1 to 64 with this one file. Not a detector (random
weights): for timing and parity only.

    /usr/bin/python3 tools/make_yolov8n.py --out build/models/yolov8n_arch.onnx [--imgsz 640 640]

Needs the Debian python (torch 1.13, onnx 1.12).
"""

import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_yolov8 import C2f, SPPF, Conv, Detect  # noqa: E402


class BatchDFL(nn.Module):
    """tiny_yolov8.DFL with the batch taken from the input's shape (a Shape op in the graph, which
    the engine resolves when it plans a batch), for the dynamic-batch export."""

    def __init__(self, dfl):
        super().__init__()
        self.reg_max, self.conv = dfl.reg_max, dfl.conv

    def forward(self, x):
        b = x.shape[0]
        return self.conv(x.view(b, 4, self.reg_max, -1).transpose(2, 1).softmax(1)).view(b, 4, -1)


def batch_decode(self, x):
    """tiny_yolov8.Detect.decode with the batch from the feature maps' shape (the anchor grid
    stays a constant: the input size is fixed)."""
    Detect.decode(self, x)  # fills the anchor cache for these shapes
    _, anchors, strides = self.anchor_cache
    return self.decode_with(x, anchors, strides, x[0].shape[0])


class YoloV8nArch(nn.Module):
    def __init__(self, nc=80):
        super().__init__()
        self.b0 = Conv(3, 16, 3, 2)
        self.b1 = Conv(16, 32, 3, 2)
        self.b2 = C2f(32, 32, 1, True)
        self.b3 = Conv(32, 64, 3, 2)
        self.b4 = C2f(64, 64, 2, True)       # P3
        self.b5 = Conv(64, 128, 3, 2)
        self.b6 = C2f(128, 128, 2, True)     # P4
        self.b7 = Conv(128, 256, 3, 2)
        self.b8 = C2f(256, 256, 1, True)
        self.b9 = SPPF(256, 256, 5)          # P5
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h12 = C2f(384, 128, 1)
        self.h15 = C2f(192, 64, 1)
        self.h16 = Conv(64, 64, 3, 2)
        self.h18 = C2f(192, 128, 1)
        self.h19 = Conv(128, 128, 3, 2)
        self.h21 = C2f(384, 256, 1)
        # Ultralytics: c2 = max(16, ch[0] // 4, 4 * reg_max) = 64, c3 = max(ch[0], min(nc, 100)) = 80.
        self.detect = Detect(nc, (64, 128, 256), 16, 64, max(64, min(nc, 100)))

    def forward(self, x):
        x = self.b2(self.b1(self.b0(x)))
        p3 = self.b4(self.b3(x))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        n4 = self.h12(torch.cat((self.up(p5), p4), 1))
        o3 = self.h15(torch.cat((self.up(n4), p3), 1))
        o4 = self.h18(torch.cat((self.h16(o3), n4), 1))
        o5 = self.h21(torch.cat((self.h19(o4), p5), 1))
        return self.detect([o3, o4, o5])


def conv_flops(model, imgsz):
    total = 0

    def hook(m, inp, out):
        nonlocal total
        k = m.kernel_size[0] * m.kernel_size[1] * (m.in_channels // m.groups)
        total += 2 * k * out.numel()

    hooks = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(torch.zeros(1, 3, imgsz[1], imgsz[0]))
    for h in hooks:
        h.remove()
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/models/yolov8n_arch.onnx")
    ap.add_argument("--imgsz", type=int, nargs=2, default=(640, 640), metavar=("W", "H"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opset", type=int, default=17)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    model = YoloV8nArch().eval()
    # Random but realistic BN statistics, so folding BN into the convolutions is exercised.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)
    w, h = args.imgsz
    params = sum(p.numel() for p in model.parameters())
    flops = conv_flops(model, args.imgsz)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    dummy = torch.zeros(1, 3, h, w)
    model.detect.dfl = BatchDFL(model.detect.dfl)
    model.detect.decode = batch_decode.__get__(model.detect, Detect)
    with torch.no_grad():
        out_shape = model(dummy).shape
        torch.onnx.export(model, dummy, args.out, opset_version=args.opset, input_names=["images"],
                          output_names=["output0"], do_constant_folding=True,
                          dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}})
    import onnx
    m = onnx.load(args.out)
    # The exporter leaves the output's class and anchor dims symbolic: they are fixed (84, 8400).
    for d, n in zip(list(m.graph.output[0].type.tensor_type.shape.dim)[1:], out_shape[1:]):
        d.ClearField("dim_param")
        d.dim_value = n
    names = {i: f"class{i}" for i in range(80)}
    for k, v in {"description": "YOLOv8n-architecture model with random weights (streamdet tools/make_yolov8n.py)",
                 "task": "detect", "stride": "32", "imgsz": f"[{h}, {w}]", "names": str(names)}.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.save(m, args.out)
    out = [d.dim_param or d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim]
    print(f"{args.out}: {params / 1e6:.2f}M parameters, {flops / 1e9:.2f} GFLOPs at {w}x{h}, opset {args.opset}, output {out}")


if __name__ == "__main__":
    main()

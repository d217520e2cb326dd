"""Re-exports the bundled tiny detector with dynamic axes: batch, height and width.

models/tiny_synth_v8.onnx has a fixed input [1, 3, 256, 256] (so that Debian's OpenCV 4.6 DNN,
which cannot run the Shape/Range ops a dynamic head needs, loads it). Batching (`--batch`) and
`--input-size auto` or any other size need a model exported with dynamic axes, as users export
theirs (`yolo export format=onnx dynamic=True`). This script makes one from the same weights:

  1. builds the network of tools/tiny_yolov8.py with each Conv+BN as one biased convolution (the
     fixed export folded the batch norms into the convolutions);
  2. copies the weights of the fixed model's Conv nodes, in the order the network runs them;
  3. checks that it reproduces the fixed model's output on a test image (through ONNX's own
     reference evaluator when onnx has one, else against the torch model only);
  4. exports with dynamic batch/height/width: the DFL's reshapes and the anchor grid are computed
     from the feature maps' shapes in the graph (Shape, Range, ...), as Ultralytics' dynamic
     export does.

    /usr/bin/python3 tools/make_dynamic_model.py --fixed models/tiny_synth_v8.onnx \\
        --out models/tiny_synth_v8_dynamic.onnx

Needs the Debian python (python3-torch, python3-onnx). Deterministic: no training, no randomness.
"""

import argparse
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_yolov8  # noqa: E402
from tiny_yolov8 import STRIDES, Conv, TinyYoloV8  # noqa: E402


def fold_batch_norms(model):
    """Each Conv+BN+SiLU becomes Conv(bias)+SiLU: the form the fixed export holds."""
    for m in model.modules():
        if isinstance(m, Conv):
            c = m.conv
            m.conv = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding, bias=True)
            m.bn = nn.Identity()


def conv_out_channels(fixed):
    inits = {i.name: i for i in fixed.graph.initializer}
    return {n.name: inits[n.input[1]].dims[0] for n in fixed.graph.node if n.op_type == "Conv"}


def widths_of(fixed):
    """The stage widths (stride 2 to 32), read off the downsampling convolutions' outputs."""
    out = conv_out_channels(fixed)
    return tuple(out[f"/{name}/conv/Conv"] for name in
                 ("stem", "stage1/stage1.0", "stage2/stage2.0", "stage3/stage3.0", "stage4/stage4.0"))


def head_width_of(fixed):
    return conv_out_channels(fixed)["/detect/cv2.0/cv2.0.0/conv/Conv"]


def convs_in_run_order(model, imgsz):
    order = []
    hooks = [m.register_forward_hook(lambda mod, _i, _o: order.append(mod))
             for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(torch.zeros(1, 3, imgsz[1], imgsz[0]))
    for h in hooks:
        h.remove()
    return order


def load_fixed_weights(model, fixed, imgsz):
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in fixed.graph.initializer}
    onnx_convs = [n for n in fixed.graph.node if n.op_type == "Conv"]
    torch_convs = convs_in_run_order(model, imgsz)
    if len(onnx_convs) != len(torch_convs):
        sys.exit(f"the fixed model has {len(onnx_convs)} Conv nodes, the network {len(torch_convs)}")
    for node, conv in zip(onnx_convs, torch_convs):
        w = inits[node.input[1]]
        if tuple(w.shape) != tuple(conv.weight.shape):
            sys.exit(f"Conv {node.name}: weight {w.shape} where the network has {tuple(conv.weight.shape)}")
        conv.weight.data = torch.from_numpy(w.copy())
        if conv.bias is not None:
            if len(node.input) < 3:
                sys.exit(f"Conv {node.name} has no bias where the network has one")
            conv.bias.data = torch.from_numpy(inits[node.input[2]].copy())


class DynamicDFL(nn.Module):
    """tiny_yolov8.DFL with the batch taken from the input's shape (a Shape op in the graph)."""

    def __init__(self, dfl):
        super().__init__()
        self.reg_max, self.conv = dfl.reg_max, dfl.conv

    def forward(self, x):
        b = x.shape[0]
        return self.conv(x.view(b, 4, self.reg_max, -1).transpose(2, 1).softmax(1)).view(b, 4, -1)


def dynamic_decode(self, x):
    """tiny_yolov8.Detect.decode with the anchor grid built from the feature maps' shapes."""
    b = x[0].shape[0]
    points, strides = [], []
    for xi, s in zip(x, STRIDES):
        h, w = xi.shape[2], xi.shape[3]
        sx = torch.arange(w, dtype=torch.float32) + 0.5
        sy = torch.arange(h, dtype=torch.float32) + 0.5
        gy, gx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((gx, gy), 0).view(1, 2, -1))
        strides.append(torch.ones_like(gx).view(1, 1, -1) * float(s))
    return self.decode_with(x, torch.cat(points, 2), torch.cat(strides, 2), b)


def reference_output(fixed_path, image):
    """The fixed model's own output, by ONNX's reference evaluator (onnx >= 1.13), or None."""
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        return None
    return ReferenceEvaluator(fixed_path).run(None, {"images": image})[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixed", default="models/tiny_synth_v8.onnx")
    ap.add_argument("--out", default="models/tiny_synth_v8_dynamic.onnx")
    ap.add_argument("--opset", type=int, default=12)
    args = ap.parse_args()

    fixed = onnx.load(args.fixed)
    meta = {p.key: p.value for p in fixed.metadata_props}
    dims = [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim]
    imgsz = (dims[3], dims[2])
    names = eval(meta["names"])  # noqa: S307 - our own model's metadata, a dict literal
    model = TinyYoloV8(len(names), widths=widths_of(fixed), c_head=head_width_of(fixed))
    fold_batch_norms(model)
    model.eval()
    load_fixed_weights(model, fixed, imgsz)
    model.detect.dfl = DynamicDFL(model.detect.dfl)
    model.detect.decode = dynamic_decode.__get__(model.detect, tiny_yolov8.Detect)

    rng = np.random.default_rng(7)
    image = rng.random((1, 3, imgsz[1], imgsz[0]), dtype=np.float32)
    with torch.no_grad():
        ours = model(torch.from_numpy(image)).numpy()
    ref = reference_output(args.fixed, image)
    if ref is not None:
        worst = float(np.abs(ours - ref).max())
        print(f"torch with the fixed model's weights against the fixed model: max |diff| {worst:.2e}")
        if worst > 1e-3:
            sys.exit("the rebuilt network does not reproduce the fixed model")
    else:
        print("this onnx has no reference evaluator: check the result with streamdet_onnx_run (docs in models/README.md)")

    x = torch.from_numpy(image)
    torch.onnx.export(model, x, args.out, opset_version=args.opset, input_names=["images"],
                      output_names=["output0"], do_constant_folding=True,
                      dynamic_axes={"images": {0: "batch", 2: "height", 3: "width"},
                                    "output0": {0: "batch", 2: "anchors"}})
    m = onnx.load(args.out)
    meta["description"] = meta.get("description", "") + "; dynamic batch, height and width"
    meta["batch"] = "-1"
    meta["dynamic"] = "True"
    m.producer_name = "streamdet"
    del m.metadata_props[:]
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.checker.check_model(m)
    onnx.save(m, args.out)
    print(f"wrote {args.out}: {os.path.getsize(args.out)} bytes, opset {args.opset}, "
          f"ops {sorted({n.op_type for n in m.graph.node})}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""A QDQ copy of an fp32 ONNX detector, laid out as ONNX Runtime's quantize_static writes one
(QuantizeLinear/DequantizeLinear on each convolution's input, DequantizeLinear of int8 weights and
int32 bias, QuantizeLinear/DequantizeLinear on its output), for measuring the int8 path's SPEED.

The activation scales are not calibrated (no runtime here to collect ranges): each convolution's
input is taken as [-0.5, 8) (SiLU outputs) and its output as [-8, 8); weights are quantized per
tensor (symmetric int8, so the model stays at its opset: per-channel axes need opset 13), biases
to int32 at input scale x weight scale. Detections from it are not meaningful; timings are.
Convolutions with a single output channel (YOLOv8's DFL) stay float.

usage: bench/make_qdq_model.py in.onnx out.onnx   (Debian's python3-onnx)
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main(src, dst):
    m = onnx.load(src)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    new_nodes, new_inits = [], []

    def const(name, value):
        new_inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def qdq(tensor, scale, zero_point, tag):
        s = const(tag + "_scale", np.float32(scale))
        z = const(tag + "_zero", np.uint8(zero_point))
        new_nodes.append(helper.make_node("QuantizeLinear", [tensor, s, z], [tag + "_q"], name=tag + "_Q"))
        new_nodes.append(helper.make_node("DequantizeLinear", [tag + "_q", s, z], [tag + "_dq"], name=tag + "_DQ"))
        return tag + "_dq"

    for n in g.node:
        if n.op_type != "Conv" or n.input[1] not in inits:
            new_nodes.append(n)
            continue
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        if w.shape[0] == 1:
            new_nodes.append(n)
            continue
        tag = n.name.strip("/").replace("/", "_") or n.output[0]
        in_scale = 1.0 / 255 if n.input[0] in [i.name for i in g.input] else 8.5 / 255
        in_zero = 0 if in_scale == 1.0 / 255 else 15
        x = qdq(n.input[0], in_scale, in_zero, tag + "_x")
        w_scale = max(float(np.abs(w).max()), 1e-8) / 127
        wq = np.clip(np.rint(w / w_scale), -127, 127).astype(np.int8)
        wname = const(tag + "_w_int8", wq)
        ws = const(tag + "_w_scale", np.float32(w_scale))
        wz = const(tag + "_w_zero", np.int8(0))
        new_nodes.append(helper.make_node("DequantizeLinear", [wname, ws, wz], [tag + "_w_dq"], name=tag + "_wDQ"))
        ins = [x, tag + "_w_dq"]
        if len(n.input) > 2 and n.input[2]:
            b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float32)
            bs = np.float32(in_scale * w_scale)
            bq = np.rint(b / bs).astype(np.int32)
            bname = const(tag + "_b_int32", bq)
            bsn = const(tag + "_b_scale", bs)
            bz = const(tag + "_b_zero", np.int32(0))
            new_nodes.append(helper.make_node("DequantizeLinear", [bname, bsn, bz], [tag + "_b_dq"], name=tag + "_bDQ"))
            ins.append(tag + "_b_dq")
        out = n.output[0]
        conv = helper.make_node("Conv", ins, [tag + "_y"], name=n.name)
        conv.attribute.extend(n.attribute)
        new_nodes.append(conv)
        s = const(tag + "_y_scale", np.float32(16.0 / 255))
        z = const(tag + "_y_zero", np.uint8(128))
        new_nodes.append(helper.make_node("QuantizeLinear", [tag + "_y", s, z], [tag + "_yq"], name=tag + "_yQ"))
        new_nodes.append(helper.make_node("DequantizeLinear", [tag + "_yq", s, z], [out], name=tag + "_yDQ"))

    del g.node[:]
    g.node.extend(new_nodes)
    g.initializer.extend(new_inits)
    used = {i for n in g.node for i in n.input}
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    onnx.checker.check_model(m)
    onnx.save(m, dst)


if __name__ == "__main__":
    main(*sys.argv[1:3])

// Builds QDQ models the way `streamdet quantize` writes them, for the int8 tests (int8 dataflow,
// Concat in place): QuantizeLinear / DequantizeLinear pairs around int8 convolutions whose float
// SiLU reads the dequantized result.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "onnx_builder.h"

namespace sd::test {

struct QdqModelBuilder {
  OnnxBuilder b{13};
  std::mt19937 rng{7};
  int id = 0;

  // f -> QuantizeLinear(scale, uint8 zero point) -> q; returns q. Its parameters are named
  // "qs<id>" and "qz<id>", id the value of `id` after the call.
  std::string quantize(const std::string& f, float scale, int zero) {
    const std::string k = std::to_string(++id);
    b.initializer("qs" + k, {}, {scale});
    init_raw<uint8_t>(b, "qz" + k, {}, onnx::TensorProto::UINT8, {static_cast<uint8_t>(zero)});
    b.node("QuantizeLinear", {f, "qs" + k, "qz" + k}, {"q" + k});
    return "q" + k;
  }
  // q (quantized with scale/zero) -> DequantizeLinear -> float; returns the float.
  std::string dequantize(const std::string& q, float scale, int zero) {
    const std::string k = std::to_string(++id);
    b.initializer("ds" + k, {}, {scale});
    init_raw<uint8_t>(b, "dz" + k, {}, onnx::TensorProto::UINT8, {static_cast<uint8_t>(zero)});
    b.node("DequantizeLinear", {q, "ds" + k, "dz" + k}, {"dq" + k});
    return "dq" + k;
  }
  // q (quantized with scale/zero) -> DequantizeLinear -> Conv k x k (7-bit int8 weights per
  // channel, int32 bias) -> QuantizeLinear -> DequantizeLinear -> x * Sigmoid(x): the float SiLU.
  std::string conv_silu(const std::string& q, float in_scale, int in_zero, int64_t cin, int64_t cout, int64_t k, float y_scale, int y_zero,
                        int64_t stride = 1) {
    const std::string id_s = std::to_string(++id);
    // The input's parameters are those of the QuantizeLinear that wrote q (re-declared here).
    b.initializer("xs" + id_s, {}, {in_scale});
    init_raw<uint8_t>(b, "xz" + id_s, {}, onnx::TensorProto::UINT8, {static_cast<uint8_t>(in_zero)});
    b.node("DequantizeLinear", {q, "xs" + id_s, "xz" + id_s}, {"d" + id_s});
    std::uniform_int_distribution<int> wi(-63, 63);
    std::vector<int8_t> w(static_cast<size_t>(cout * cin * k * k));
    for (auto& v : w) v = static_cast<int8_t>(wi(rng));
    init_raw<int8_t>(b, "w" + id_s, {cout, cin, k, k}, onnx::TensorProto::INT8, w);
    std::uniform_real_distribution<float> su(0.5f, 1.5f);
    const float base = 1.5f / (63.f * std::sqrt(static_cast<float>(cin * k * k)));
    std::vector<float> ws(static_cast<size_t>(cout));
    for (auto& v : ws) v = base * su(rng);
    b.initializer("ws" + id_s, {cout}, ws);
    init_raw<int8_t>(b, "wz" + id_s, {cout}, onnx::TensorProto::INT8, std::vector<int8_t>(ws.size(), 0));
    OnnxBuilder::attr_int(b.node("DequantizeLinear", {"w" + id_s, "ws" + id_s, "wz" + id_s}, {"wf" + id_s}), "axis", 0);
    std::uniform_real_distribution<float> bu(-0.3f, 0.3f);
    std::vector<int32_t> bq(static_cast<size_t>(cout));
    std::vector<float> bs(static_cast<size_t>(cout));
    for (size_t o = 0; o < bq.size(); ++o) {
      bs[o] = in_scale * ws[o];
      bq[o] = static_cast<int32_t>(std::lround(bu(rng) / bs[o]));
    }
    init_raw<int32_t>(b, "b" + id_s, {cout}, onnx::TensorProto::INT32, bq);
    b.initializer("bs" + id_s, {cout}, bs);
    OnnxBuilder::attr_int(b.node("DequantizeLinear", {"b" + id_s, "bs" + id_s}, {"bf" + id_s}), "axis", 0);
    auto* conv = b.node("Conv", {"d" + id_s, "wf" + id_s, "bf" + id_s}, {"c" + id_s});
    OnnxBuilder::attr_ints(conv, "pads", {k / 2, k / 2, k / 2, k / 2});
    if (stride != 1) OnnxBuilder::attr_ints(conv, "strides", {stride, stride});
    b.initializer("ys" + id_s, {}, {y_scale});
    init_raw<uint8_t>(b, "yz" + id_s, {}, onnx::TensorProto::UINT8, {static_cast<uint8_t>(y_zero)});
    b.node("QuantizeLinear", {"c" + id_s, "ys" + id_s, "yz" + id_s}, {"cq" + id_s});
    b.node("DequantizeLinear", {"cq" + id_s, "ys" + id_s, "yz" + id_s}, {"cd" + id_s});
    b.node("Sigmoid", {"cd" + id_s}, {"sg" + id_s});
    b.node("Mul", {"cd" + id_s, "sg" + id_s}, {"silu" + id_s});
    return "silu" + id_s;
  }
};

}  // namespace sd::test

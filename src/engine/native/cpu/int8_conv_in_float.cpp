#include "engine/native/cpu/int8_conv_in_float.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/native/conv_attrs.h"
#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/cpu/quantized_silu.h"
#include "engine/native/host_tensor.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

constexpr size_t kAlign = 64;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
constexpr int64_t kChunk = 16384;  // elements per task of the conversion passes

class Int8ConvInFloat : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const auto& a = ctx.node.attrs;
    const DType xt = ctx.inputs[0].dtype;
    if ((xt != DType::kInt8 && xt != DType::kUInt8) || ctx.inputs[1].dtype != DType::kInt8)
      return fail(ErrorCode::kModel, ctx.describe() + ": an int8 convolution takes int8/uint8 data and int8 weights");
    if (!ctx.constants[1] || (has_input(ctx, 2) && !ctx.constants[2]))
      return fail(ErrorCode::kModel, ctx.describe() + ": weights and bias must be constant");
    SD_ASSIGN_OR_RETURN(const ConvGeometry g, conv_geometry(ctx));
    y_float_ = a.get_int("y_float", 0) != 0;
    const float xs = a.get_float("x_scale", 1.f);
    const auto xz = static_cast<int32_t>(a.get_int("x_zero_point", 0));
    y_q_ = {a.get_float("y_scale", 1.f), static_cast<int32_t>(a.get_int("y_zero_point", 0)), a.get_int("y_signed", 0) != 0};
    const auto ws = a.get_floats("w_scales");
    if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != g.oc) return fail(ErrorCode::kModel, ctx.describe() + ": bad w_scales");
    auto w_scale = [&](int64_t oc) { return ws[ws.size() == 1 ? 0 : static_cast<size_t>(oc)]; };

    x_q_ = {xs, xz, xt == DType::kInt8};
    // The weights as their DequantizeLinear computes them; the bias back from accumulator units.
    const HostTensor& wq = *ctx.constants[1];
    weights_ = HostTensor(DType::kFloat32, wq.shape());
    const int64_t per_oc = wq.numel() / g.oc;
    for (int64_t i = 0; i < wq.numel(); ++i) weights_.as<float>()[i] = static_cast<float>(wq.as<int8_t>()[i]) * w_scale(i / per_oc);
    const bool has_bias = has_input(ctx, 2);
    if (has_bias) {
      bias_ = HostTensor(DType::kFloat32, Shape{g.oc});
      for (int64_t c = 0; c < g.oc; ++c) bias_.as<float>()[c] = ctx.constants[2]->as<float>()[c] * (xs * w_scale(c));
    }

    // The float convolution: the same node (geometry, layouts, threads, forced choices) as a
    // FusedConv without post ops, on float tensors of the same shapes.
    inner_node_ = ctx.node;
    inner_node_.op_type = "FusedConv";
    inner_node_.domain = "streamdet";
    inner_types_ = {ValueType{DType::kFloat32, ctx.inputs[0].shape}, ValueType{DType::kFloat32, wq.shape()}};
    inner_constants_ = {nullptr, &weights_};
    if (has_bias) {
      inner_types_.push_back(ValueType{DType::kFloat32, Shape{g.oc}});
      inner_constants_.push_back(&bias_);
    }
    inner_out_ = {ValueType{DType::kFloat32, ctx.outputs[0].shape}};
    const OpSchema* schema = builtin_op_registry().find("FusedConv", ctx.opset);
    if (!schema || !schema->create) return fail(ErrorCode::kInternal, ctx.describe() + ": no float convolution to compute it with");
    const OpContext inner{inner_node_, ctx.opset, inner_types_, inner_constants_, inner_out_};
    SD_ASSIGN_OR_RETURN(conv_, schema->create(inner));

    src_bytes_ = aligned(static_cast<size_t>(ctx.inputs[0].shape.numel()) * sizeof(float));
    dst_bytes_ = y_float_ ? 0 : aligned(static_cast<size_t>(ctx.outputs[0].shape.numel()) * sizeof(float));
    if (a.has("silu_in_scale") && !y_float_) {
      const auto silu = quantized_silu_table(a, y_q_.is_signed, ctx.outputs[0].dtype == DType::kInt8);
      silu_.emplace();
      for (size_t b = 0; b < 256; ++b) (*silu_)[b] = silu[b];
    }
    dequantize_ = int8_float::dequantize_kernel(cpu::active_isa());
    quantize_ = int8_float::quantize_kernel(cpu::active_isa());
    return ok();
  }

  // [the dequantized source | the float result (unless the output is float) | the convolution's]
  size_t scratch_bytes() const override { return src_bytes_ + dst_bytes_ + conv_->scratch_bytes(); }
  std::string implementation() const override { return "float32 " + conv_->implementation() + (silu_ ? "+silu_table" : ""); }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    auto* x = static_cast<float*>(static_cast<void*>(ctx.scratch));
    const int64_t xn = in[0].numel(), yn = out[0].numel();
    const auto* xq = static_cast<const uint8_t*>(in[0].data);
    parallel_for(xn, ctx.threads, kChunk, [&](int64_t b, int64_t e) { dequantize_(xq + b, e - b, x_q_, x + b); });

    const std::array<TensorRef, 3> conv_in{TensorRef(DType::kFloat32, in[0].shape, x),
                                           TensorRef(DType::kFloat32, weights_.shape(), const_cast<void*>(weights_.data())),
                                           TensorRef(DType::kFloat32, bias_.shape(), const_cast<void*>(bias_.data()))};
    TensorRef result = y_float_ ? out[0] : TensorRef(DType::kFloat32, out[0].shape, ctx.scratch + src_bytes_);
    ExecContext inner = ctx;
    inner.scratch = ctx.scratch + src_bytes_ + dst_bytes_;
    SD_TRY(conv_->run(std::span<const TensorRef>(conv_in.data(), in.size()), std::span<const TensorRef>(&result, 1), inner));
    if (y_float_) return ok();

    const float* y = result.as<float>();
    auto* q = static_cast<uint8_t*>(out[0].data);
    const int32_t* table = silu_ ? silu_->data() : nullptr;
    parallel_for(yn, ctx.threads, kChunk, [&](int64_t b, int64_t e) { quantize_(y + b, e - b, y_q_, table, q + b); });
    return ok();
  }

 private:
  bool y_float_ = false;
  int8_float::Quantization x_q_, y_q_;
  HostTensor weights_, bias_;
  Node inner_node_;
  std::vector<ValueType> inner_types_, inner_out_;
  std::vector<const HostTensor*> inner_constants_;
  std::unique_ptr<Kernel> conv_;
  size_t src_bytes_ = 0, dst_bytes_ = 0;
  std::optional<std::array<int32_t, 256>> silu_;  // the quantized SiLU's bytes, by the quantized byte
  int8_float::DequantizeFn dequantize_ = int8_float::dequantize_baseline;
  int8_float::QuantizeFn quantize_ = int8_float::quantize_baseline;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_int8_conv_in_float(const OpContext& ctx) { return make_factory<Int8ConvInFloat>()(ctx); }

}  // namespace sd::native::ops

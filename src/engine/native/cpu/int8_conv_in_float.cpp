#include "engine/native/cpu/int8_conv_in_float.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/conv_choice.h"
#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/cpu/quantized_silu.h"
#include "engine/native/cpu/timed_choice.h"
#include "engine/native/cpu/int16_conv.h"
#include "engine/native/host_tensor.h"
#include "engine/native/layout_attrs.h"
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
    const bool has_bias = has_bias_ = has_input(ctx, 2);
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
      silu_ = quantized_silu_table(a, y_q_.is_signed, ctx.outputs[0].dtype == DType::kInt8);
    }
    dequantize_ = int8_float::dequantize_kernel(cpu::active_isa());
    quantize_ = int8_float::quantize_kernel(cpu::active_isa());
    choose_int16(ctx, g, ws, has_bias);
    return ok();
  }

  // The layers an int16 kernel takes (int16_conv.h: 3x3 stride-1 by Winograd, others by a GEMM) run
  // there on the bytes, against the float32 convolution of the dequantized source: the faster on
  // the node's shape, timed at load (kept per shape for the process); or forced by kConvCandidate
  // (0: float32, 1 and up: int16; conv_choice.h's order, what ran before first).
  void choose_int16(const OpContext& ctx, const ConvGeometry& g, const std::vector<float>& ws, bool has_bias) {
    const auto& a = ctx.node.attrs;
    const int64_t lo = x_q_.is_signed ? -128 : 0;
    const bool dense_nhwc = a.get_int(kSrcNhwc, 0) != 0 && a.get_int(kDstNhwc, 0) != 0 && a.get_int(kSrcPixelStride, 0) == 0 &&
                            a.get_int(kDstPixelStride, 0) == 0;
    if (!dense_nhwc || cpu::active_isa() < cpu::Isa::kAvx2 || x_q_.zero_point < lo || x_q_.zero_point > lo + 255) return;
    const int64_t candidate = a.get_int(kConvCandidate, kTimedCandidate);
    if (candidate == 0) return;
    channels_ = g.c;
    int16_ = make_int16_conv(g, ctx.constants[1]->as<int8_t>(), ws, has_bias ? bias_.as<float>() : nullptr, x_q_.scale, x_q_.zero_point,
                             x_q_.is_signed);
    if (!int16_) return;
    if (candidate == kTimedCandidate) {
      const int64_t threads = std::max<int64_t>(1, a.get_int(kPlanThreads, 1));
      const std::string key = "int8|f32|i16," + dnnl_ops::geometry_key(g, threads) + "," + std::to_string(x_q_.is_signed) +
                              std::to_string(y_float_) + std::to_string(silu_.has_value()) + "," + conv_->implementation();
      const size_t best = dnnl_ops::remembered_choice(key, [&] {
        const size_t xn = static_cast<size_t>(ctx.inputs[0].shape.numel()), yn = static_cast<size_t>(ctx.outputs[0].shape.numel());
        HostTensor x = dnnl_ops::timing_bytes(xn, true), y = dnnl_ops::timing_bytes(yn * sizeof(float)), scratch = dnnl_ops::timing_bytes(scratch_bytes());
        ExecContext ec;
        ec.threads = static_cast<int>(threads);
        ec.scratch = static_cast<unsigned char*>(scratch.data());
        const TensorRef in(ctx.inputs[0].dtype, ctx.inputs[0].shape, x.data());
        const TensorRef out(ctx.outputs[0].dtype, ctx.outputs[0].shape, y.data());
        // A float path that fails does not run the node, however fast it fails.
        if (!run_with(false, in, out, ec)) return size_t{0};
        // The int16 kernel is the incumbent (candidate 0): 1.3-1.8x float32's speed on YOLOv8n's
        // 3x3 layers at 20x20 to 160x160 (docs/benchmarks.md), so float32 must win every round by
        // 5% to take a node, and a busy machine's noise leaves the faster kernel in place.
        return dnnl_ops::fastest_candidate(2, [&](size_t i) { (void)run_with(i == 0, in, out, ec); }, dnnl_ops::TimingRule{0.8, 0.95, true, 0.0});
      });
      if (best == 1) {
        int16_.reset();
        return;
      }
    }
    conv_.reset();  // the float32 path is not run again: its packed weights and scratch go
    src_bytes_ = dst_bytes_ = 0;
  }

  // The whole node, by the int16 kernel (quantizing its outputs as they come) or in float32.
  Status run_with(bool int16, const TensorRef& x, const TensorRef& y, const ExecContext& ctx) {
    const uint8_t* table = silu_ ? silu_->data() : nullptr;
    const auto* xq = static_cast<const uint8_t*>(x.data);
    if (int16) {
      if (y_float_)
        int16_->run(xq, static_cast<float*>(y.data), ctx.threads);
      else
        int16_->run_quantized(xq, static_cast<uint8_t*>(y.data), y_q_, table, quantize_, ctx.threads);
      return ok();
    }
    const TensorRef result = y_float_ ? y : TensorRef(DType::kFloat32, y.shape, ctx.scratch + src_bytes_);
    SD_TRY(run_float(x, result, ctx));
    if (y_float_) return ok();
    const float* r = result.as<float>();
    auto* q = static_cast<uint8_t*>(y.data);
    parallel_for(y.numel(), ctx.threads, kChunk, [&](int64_t b, int64_t e) { quantize_(r + b, e - b, y_q_, table, q + b); });
    return ok();
  }

  // The float32 path: the source dequantized into scratch, the float convolution into `result`.
  Status run_float(const TensorRef& xq_ref, const TensorRef& result, const ExecContext& ctx) {
    auto* x = static_cast<float*>(static_cast<void*>(ctx.scratch));
    const auto* xq = static_cast<const uint8_t*>(xq_ref.data);
    parallel_for(xq_ref.numel(), ctx.threads, kChunk, [&](int64_t b, int64_t e) { dequantize_(xq + b, e - b, x_q_, x + b); });
    const std::array<TensorRef, 3> conv_in{TensorRef(DType::kFloat32, xq_ref.shape, x),
                                           TensorRef(DType::kFloat32, weights_.shape(), const_cast<void*>(weights_.data())),
                                           TensorRef(DType::kFloat32, bias_.shape(), const_cast<void*>(bias_.data()))};
    ExecContext inner = ctx;
    inner.scratch = ctx.scratch + src_bytes_ + dst_bytes_;
    TensorRef out = result;
    return conv_->run(std::span<const TensorRef>(conv_in.data(), has_bias_ ? 3 : 2), std::span<const TensorRef>(&out, 1), inner);
  }

  // The float32 path's: [the dequantized source | the float result (unless the output is float) | the convolution's]
  size_t scratch_bytes() const override { return src_bytes_ + dst_bytes_ + (conv_ ? conv_->scratch_bytes() : 0); }
  std::string implementation() const override {
    // The int16 kernel's chunk where its int32 sums take fewer than all the channels at once.
    const std::string chunk = int16_ && int16_->chunk_channels() < channels_ ? "(chunks of " + std::to_string(int16_->chunk_channels()) + ")" : "";
    return (int16_ ? std::string("int16 ") + int16_->name() + chunk : "float32 " + conv_->implementation()) + (silu_ ? "+silu_table" : "");
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    return run_with(int16_ != nullptr, in[0], out[0], ctx);
  }

 private:
  bool y_float_ = false;
  bool has_bias_ = false;
  int64_t channels_ = 0;
  int8_float::Quantization x_q_, y_q_;
  HostTensor weights_, bias_;
  Node inner_node_;
  std::vector<ValueType> inner_types_, inner_out_;
  std::vector<const HostTensor*> inner_constants_;
  std::unique_ptr<Kernel> conv_;  // the float32 path (null where an int16 kernel runs the node)
  std::unique_ptr<Int16Conv> int16_;
  size_t src_bytes_ = 0, dst_bytes_ = 0;
  std::optional<std::array<uint8_t, 256>> silu_;  // the quantized SiLU's bytes, by the quantized byte
  int8_float::DequantizeFn dequantize_ = int8_float::dequantize_baseline;
  int8_float::QuantizeFn quantize_ = int8_float::quantize_baseline;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_int8_conv_in_float(const OpContext& ctx) { return make_factory<Int8ConvInFloat>()(ctx); }

}  // namespace sd::native::ops

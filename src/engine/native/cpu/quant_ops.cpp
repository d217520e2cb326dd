// ONNX's quantization ops on the CPU, as ONNX specifies them (the reference path; the planner's
// int8 convolutions, cpu/dnnl_qconv.cpp, are checked against it):
//  - QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point), per tensor or per
//    channel along `axis`; int8 or uint8 (the zero point's type; uint8 without one).
//  - DequantizeLinear: y = (x - zero_point) * scale; int8, uint8, or int32 (biases).
//  - DynamicQuantizeLinear: uint8 with the scale and zero point from the tensor's range (and 0).
//  - ConvInteger, MatMulInteger: int32 results of (x - x_zp) conv/matmul (w - w_zp).
//  - QLinearConv, QLinearMatMul: the same requantized, acc * (x_scale * w_scale / y_scale) +
//    y_zero_point, rounded half to even and saturated.
// Scales and zero points are read when the step runs: ONNX's tests feed them as graph inputs.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "engine/native/conv_attrs.h"
#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/cpu/quantize_nhwc.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/quant_params.h"
#include "engine/native/numeric.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

bool is_q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

int32_t int_at(const TensorRef& t, int64_t i) {
  switch (t.dtype) {
    case DType::kInt8: return t.as<int8_t>()[i];
    case DType::kUInt8: return t.as<uint8_t>()[i];
    case DType::kInt32: return t.as<int32_t>()[i];
    default: return 0;
  }
}

// A scale or zero point: one value, or one per channel.
int64_t param_at(const TensorRef& t, int64_t c) { return t.numel() == 1 ? 0 : c; }

// round half to even (std::nearbyint in the default rounding mode), plus the zero point,
// saturated to T; NaN gives the zero point's neighbour 0 as saturate_cast does.
template <class T>
T quantize_value(float scaled, int32_t zp) {
  const float r = std::nearbyint(scaled) + static_cast<float>(zp);
  return saturate_cast<T>(std::clamp(r, static_cast<float>(std::numeric_limits<T>::min()), static_cast<float>(std::numeric_limits<T>::max())));
}

template <class T>
T requantize(double acc, double multiplier, int32_t zp) {
  const double r = std::nearbyint(acc * multiplier) + zp;
  return saturate_cast<T>(std::clamp(r, static_cast<double>(std::numeric_limits<T>::min()), static_cast<double>(std::numeric_limits<T>::max())));
}

// [outer, channels, inner] of a tensor split at `axis` (channels 1 for a per-tensor parameter).
struct ChannelSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};
ChannelSplit split_at(const Shape& s, int axis, bool per_channel) {
  ChannelSplit c;
  if (!per_channel) {
    c.inner = s.numel();
    return c;
  }
  for (int i = 0; i < axis; ++i) c.outer *= s[i];
  c.channels = s[axis];
  for (int i = axis + 1; i < s.rank; ++i) c.inner *= s[i];
  return c;
}

// Output element type of QuantizeLinear: the zero point's, else `output_dtype` (opset 21), else uint8.
Result<DType> quantize_output_type(const OpContext& ctx) {
  if (has_input(ctx, 2)) return ctx.inputs[2].dtype;
  if (const int64_t t = ctx.node.attrs.get_int("output_dtype", 0); t != 0) return dtype_from_onnx(static_cast<int32_t>(t));
  return DType::kUInt8;
}

// ---- QuantizeLinear / DequantizeLinear
class QdqKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    quantize_ = ctx.node.op_type == "QuantizeLinear";
    SD_ASSIGN_OR_RETURN(info_, qdq_params(ctx));
    split_ = split_at(ctx.inputs[0].shape, info_.axis, info_.per_channel);
    in_ = ctx.inputs[0].dtype;
    out_ = ctx.outputs[0].dtype;
    // The planner's request (exec/plan_layout.cpp): a plain 4-D float source, per tensor, written
    // channels-last for the int8 convolutions that read it.
    if (ctx.node.attrs.get_int(kDstNhwc, 0) != 0) {
      if (!quantize_ || info_.per_channel || in_ != DType::kFloat32 || ctx.inputs[0].shape.rank != 4)
        return fail(ErrorCode::kInternal, ctx.describe() + ": a channels-last output only for a per-tensor QuantizeLinear of 4-D floats");
      nhwc_ = true;
      shape_ = ctx.inputs[0].shape;
    }
    // The planner's strided destination (layout_attrs.h): rows of the last dimension written
    // stride_ elements apart, inside a Concat's output.
    stride_ = ctx.node.attrs.get_int(kDstPixelStride, 0);
    row_ = ctx.inputs[0].shape.rank > 0 ? ctx.inputs[0].shape[ctx.inputs[0].shape.rank - 1] : 1;
    if (stride_ == row_) stride_ = 0;
    if (stride_ != 0 && (!quantize_ || info_.per_channel || nhwc_ || in_ != DType::kFloat32 || row_ <= 0 || stride_ < row_))
      return fail(ErrorCode::kInternal, ctx.describe() + ": a strided destination only for a per-tensor QuantizeLinear of floats");
    return ok();
  }
  std::string implementation() const override { return nhwc_ ? "streamdet:quantize_to_nhwc" : ""; }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const TensorRef& x = in[0];
    const TensorRef& scale = in[1];
    const TensorRef zp = in.size() > 2 ? in[2] : TensorRef{};
    if (nhwc_) {
      quantize_to_nhwc(x.as<float>(), shape_[0], shape_[1], shape_[2], shape_[3], scale.as<float>()[0], zp.data ? int_at(zp, 0) : 0,
                       out_ == DType::kInt8, out[0].data, ctx.threads);
      return ok();
    }
    if (stride_ != 0) {
      const float sc = scale.as<float>()[0];
      const int32_t z = zp.data ? int_at(zp, 0) : 0;
      parallel_for(x.numel() / row_, ctx.threads, std::max<int64_t>(1, 16384 / row_), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          if (out_ == DType::kUInt8) quantize_row(x, r * row_, row_, sc, z, out[0].as<uint8_t>() + r * stride_);
          else quantize_row(x, r * row_, row_, sc, z, out[0].as<int8_t>() + r * stride_);
        }
      });
      return ok();
    }
    // Per tensor, one row: cut into rows of 16384 for the threads (an image's QuantizeLinear ran
    // on one thread).
    const bool one_row = split_.outer * split_.channels == 1;
    const int64_t inner = one_row ? std::min<int64_t>(split_.inner, 16384) : split_.inner;
    const int64_t rows = one_row ? (split_.inner + inner - 1) / std::max<int64_t>(inner, 1) : split_.outer * split_.channels;
    parallel_for(rows, ctx.threads, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t c = one_row ? 0 : r % split_.channels;
        const int64_t len = one_row ? std::min(inner, split_.inner - r * inner) : inner;
        const float s = scale.as<float>()[param_at(scale, c)];
        const int32_t z = zp.data ? int_at(zp, param_at(zp, c)) : 0;
        if (quantize_) {
          if (out_ == DType::kUInt8) quantize_row(x, r * inner, len, s, z, out[0].as<uint8_t>() + r * inner);
          else quantize_row(x, r * inner, len, s, z, out[0].as<int8_t>() + r * inner);
        } else {
          float* y = out[0].as<float>() + r * inner;
          switch (in_) {
            case DType::kUInt8: dequantize_row(x.as<uint8_t>() + r * inner, len, s, z, y); break;
            case DType::kInt8: dequantize_row(x.as<int8_t>() + r * inner, len, s, z, y); break;
            default: dequantize_row(x.as<int32_t>() + r * inner, len, s, z, y); break;
          }
        }
      }
    });
    return ok();
  }

 private:
  template <class T>
  void quantize_row(const TensorRef& x, int64_t at, int64_t n, float s, int32_t z, T* y) const {
    if (in_ == DType::kInt32) {
      for (int64_t i = 0; i < n; ++i) y[i] = quantize_value<T>(static_cast<float>(x.as<int32_t>()[at + i]) / s, z);
    } else {
      // quantize_value's values, vectorized (int8_float_convert.h: AVX2 and AVX-512 variants).
      quantize_floats_(x.as<float>() + at, n, {s, z, std::is_signed_v<T>}, nullptr, reinterpret_cast<uint8_t*>(y));
    }
  }
  template <class T>
  static void dequantize_row(const T* x, int64_t n, float s, int32_t z, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - z) * s;
  }

  bool quantize_ = true;
  bool nhwc_ = false;  // source N,C,H,W (shape_), destination N,H,W,C
  int64_t stride_ = 0, row_ = 1;  // a strided destination (kDstPixelStride; 0: dense)
  Shape shape_;
  QdqParams info_;
  ChannelSplit split_;
  DType in_ = DType::kFloat32, out_ = DType::kUInt8;
  int8_float::QuantizeFn quantize_floats_ = int8_float::quantize_kernel(cpu::active_isa());
};

Result<std::vector<ValueType>> infer_qdq(const OpContext& ctx) {
  if (auto p = qdq_params(ctx); !p) return tl::unexpected(p.error());
  if (ctx.node.op_type == "DequantizeLinear") return one_output(DType::kFloat32, ctx.inputs[0].shape);
  SD_ASSIGN_OR_RETURN(DType t, quantize_output_type(ctx));
  return one_output(t, ctx.inputs[0].shape);
}

// ---- DynamicQuantizeLinear (uint8 only, as ONNX defines it)
class DynamicQuantizeKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.inputs[0].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 input is supported");
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const float* x = in[0].as<float>();
    const int64_t n = in[0].numel();
    float lo = 0.f, hi = 0.f;  // the range always includes 0 so that 0 is exact
    for (int64_t i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    const float scale = (hi - lo) / 255.f;
    uint8_t zp = 0;
    if (scale > 0.f) zp = static_cast<uint8_t>(std::nearbyint(std::clamp(0.f - lo / scale, 0.f, 255.f)));
    uint8_t* y = out[0].as<uint8_t>();
    parallel_for(n, ctx.threads, 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = scale > 0.f ? quantize_value<uint8_t>(x[i] / scale, zp) : zp;
    });
    out[1].as<float>()[0] = scale;
    out[2].as<uint8_t>()[0] = zp;
    return ok();
  }
};

// ---- ConvInteger, QLinearConv: a direct convolution with int32 accumulators.
// Input slots of x, its zero point, w, its zero point.
struct ConvSlots {
  size_t x, x_zp, w, w_zp;
};
ConvSlots conv_slots(const Node& n) {
  return n.op_type == "QLinearConv" ? ConvSlots{0, 2, 3, 5} : ConvSlots{0, 2, 1, 3};
}

// conv_geometry() reads the weights from input 1: QLinearConv's are input 3.
Result<ConvGeometry> int_conv_geometry(const OpContext& ctx) {
  const ConvSlots s = conv_slots(ctx.node);
  std::vector<ValueType> ins{ctx.inputs[s.x], ctx.inputs[s.w]};
  std::vector<const HostTensor*> consts{nullptr, nullptr};
  OpContext sub{ctx.node, ctx.opset, ins, consts, {}};
  return conv_geometry(sub);
}

Status check_zero_point(const OpContext& ctx, size_t zp, size_t of, int64_t per_channel_len, const char* what) {
  if (!has_input(ctx, zp)) return ok();
  if (ctx.inputs[zp].dtype != ctx.inputs[of].dtype)
    return fail(ErrorCode::kModel, ctx.describe() + ": the " + what + " zero point is " + dtype_name(ctx.inputs[zp].dtype) + ", its tensor " + dtype_name(ctx.inputs[of].dtype));
  const int64_t n = ctx.inputs[zp].shape.numel();
  if (n != 1 && n != per_channel_len)
    return fail(ErrorCode::kModel, ctx.describe() + ": the " + what + " zero point has " + std::to_string(n) + " values, expected 1 or " + std::to_string(per_channel_len));
  return ok();
}

Status check_scale(const OpContext& ctx, size_t i, int64_t per_channel_len, const char* what) {
  if (ctx.inputs[i].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": the " + what + " scale must be float32");
  const int64_t n = ctx.inputs[i].shape.numel();
  if (n != 1 && n != per_channel_len)
    return fail(ErrorCode::kModel, ctx.describe() + ": the " + what + " scale has " + std::to_string(n) + " values, expected 1 or " + std::to_string(per_channel_len));
  return ok();
}

Result<std::vector<ValueType>> infer_int_conv(const OpContext& ctx) {
  const ConvSlots s = conv_slots(ctx.node);
  if (!is_q8(ctx.inputs[s.x].dtype) || !is_q8(ctx.inputs[s.w].dtype))
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": input and weights must be int8 or uint8");
  SD_ASSIGN_OR_RETURN(ConvGeometry g, int_conv_geometry(ctx));
  SD_TRY(check_zero_point(ctx, s.x_zp, s.x, 1, "input"));
  SD_TRY(check_zero_point(ctx, s.w_zp, s.w, g.oc, "weight"));
  DType out = DType::kInt32;
  if (ctx.node.op_type == "QLinearConv") {
    SD_TRY(check_scale(ctx, 1, 1, "input"));
    SD_TRY(check_scale(ctx, 4, g.oc, "weight"));
    SD_TRY(check_scale(ctx, 6, 1, "output"));
    out = ctx.inputs[7].dtype;
    if (!is_q8(out)) return fail(ErrorCode::kModel, ctx.describe() + ": the output zero point must be int8 or uint8");
    if (has_input(ctx, 8) && (ctx.inputs[8].dtype != DType::kInt32 || ctx.inputs[8].shape.numel() != g.oc))
      return fail(ErrorCode::kModel, ctx.describe() + ": the bias must be int32 with one value per output channel");
  }
  return one_output(out, Shape{g.n, g.oc, g.oh, g.ow});
}

class IntConvKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    slots_ = conv_slots(ctx.node);
    qlinear_ = ctx.node.op_type == "QLinearConv";
    SD_ASSIGN_OR_RETURN(g_, int_conv_geometry(ctx));
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const TensorRef& x = in[slots_.x];
    const TensorRef& w = in[slots_.w];
    const TensorRef xzp = has(in, slots_.x_zp) ? in[slots_.x_zp] : TensorRef{};
    const TensorRef wzp = has(in, slots_.w_zp) ? in[slots_.w_zp] : TensorRef{};
    const int32_t xz = xzp.data ? int_at(xzp, 0) : 0;
    const ConvGeometry& g = g_;
    const int64_t cpg = g.c / g.group, opg = g.oc / g.group;
    parallel_for(g.n * g.oc, ctx.threads, 1, [&](int64_t b, int64_t e) {
      std::vector<int32_t> acc(static_cast<size_t>(g.oh * g.ow));
      for (int64_t no = b; no < e; ++no) {
        const int64_t n = no / g.oc, oc = no % g.oc, grp = oc / opg;
        const int32_t wz = wzp.data ? int_at(wzp, param_at(wzp, oc)) : 0;
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t ic = 0; ic < cpg; ++ic) {
          const int64_t xc = (n * g.c + grp * cpg + ic) * g.h * g.w;
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int32_t wv = int_at(w, ((oc * cpg + ic) * g.kh + ky) * g.kw + kx) - wz;
              if (wv == 0) continue;
              for (int64_t oy = 0; oy < g.oh; ++oy) {
                const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
                if (iy < 0 || iy >= g.h) continue;  // padding is the zero point: contributes 0
                for (int64_t ox = 0; ox < g.ow; ++ox) {
                  const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
                  if (ix < 0 || ix >= g.w) continue;
                  acc[static_cast<size_t>(oy * g.ow + ox)] += (int_at(x, xc + iy * g.w + ix) - xz) * wv;
                }
              }
            }
        }
        const int64_t at = no * g.oh * g.ow;
        if (!qlinear_) {
          std::memcpy(out[0].as<int32_t>() + at, acc.data(), acc.size() * sizeof(int32_t));
          continue;
        }
        // QLinearConv: inputs x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B.
        const float xs = in[1].as<float>()[0], ws = in[4].as<float>()[param_at(in[4], oc)], ys = in[6].as<float>()[0];
        const float mult = xs * ws / ys;  // in float32, as ONNX's reference computes it
        const int32_t yz = int_at(in[7], 0);
        const int32_t bias = has(in, 8) ? in[8].as<int32_t>()[oc] : 0;
        for (size_t i = 0; i < acc.size(); ++i) {
          const double v = static_cast<double>(acc[i]) + bias;
          if (out[0].dtype == DType::kUInt8) out[0].as<uint8_t>()[at + static_cast<int64_t>(i)] = requantize<uint8_t>(v, mult, yz);
          else out[0].as<int8_t>()[at + static_cast<int64_t>(i)] = requantize<int8_t>(v, mult, yz);
        }
      }
    });
    return ok();
  }

 private:
  static bool has(std::span<const TensorRef> in, size_t i) { return i < in.size() && in[i].data; }
  ConvSlots slots_{};
  bool qlinear_ = false;
  ConvGeometry g_{};
};

// ---- MatMulInteger, QLinearMatMul: numpy matmul with broadcast batch dims.
struct MatSlots {
  size_t a, a_zp, b, b_zp;
};
MatSlots mat_slots(const Node& n) { return n.op_type == "QLinearMatMul" ? MatSlots{0, 2, 3, 5} : MatSlots{0, 2, 1, 3}; }

struct MatGeometry {
  Shape a, b, out, batch;  // a, b as [..., M, K], [..., K, N]; batch: the broadcast batch dims
  int64_t m = 0, k = 0, n = 0;
};

Result<MatGeometry> mat_geometry(const OpContext& ctx) {
  const MatSlots s = mat_slots(ctx.node);
  MatGeometry g;
  g.a = ctx.inputs[s.a].shape, g.b = ctx.inputs[s.b].shape;
  if (g.a.rank == 0 || g.b.rank == 0) return fail(ErrorCode::kModel, ctx.describe() + ": scalar operands");
  const bool a1 = g.a.rank == 1, b1 = g.b.rank == 1;
  if (a1) g.a = Shape{1, g.a[0]};
  if (b1) g.b = Shape{g.b[0], 1};
  g.m = g.a[g.a.rank - 2], g.k = g.a[g.a.rank - 1], g.n = g.b[g.b.rank - 1];
  if (g.k != g.b[g.b.rank - 2])
    return fail(ErrorCode::kModel, ctx.describe() + ": shapes " + ctx.inputs[s.a].shape.str() + " and " + ctx.inputs[s.b].shape.str() + " do not multiply");
  Shape ba = g.a, bb = g.b;
  ba.rank -= 2, bb.rank -= 2;
  SD_ASSIGN_OR_RETURN(g.batch, broadcast_shapes(ba, bb, ctx));
  std::vector<int64_t> out(g.batch.dims.begin(), g.batch.dims.begin() + g.batch.rank);
  if (!a1) out.push_back(g.m);
  if (!b1) out.push_back(g.n);
  g.out = Shape::from(out.begin(), out.end());
  return g;
}

Result<std::vector<ValueType>> infer_int_matmul(const OpContext& ctx) {
  const MatSlots s = mat_slots(ctx.node);
  if (!is_q8(ctx.inputs[s.a].dtype) || !is_q8(ctx.inputs[s.b].dtype))
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": A and B must be int8 or uint8");
  SD_ASSIGN_OR_RETURN(MatGeometry g, mat_geometry(ctx));
  SD_TRY(check_zero_point(ctx, s.a_zp, s.a, g.m, "A"));
  SD_TRY(check_zero_point(ctx, s.b_zp, s.b, g.n, "B"));
  if (ctx.node.op_type == "MatMulInteger") return one_output(DType::kInt32, g.out);
  SD_TRY(check_scale(ctx, 1, g.m, "A"));
  SD_TRY(check_scale(ctx, 4, g.n, "B"));
  SD_TRY(check_scale(ctx, 6, 1, "output"));
  if (!is_q8(ctx.inputs[7].dtype)) return fail(ErrorCode::kModel, ctx.describe() + ": the output zero point must be int8 or uint8");
  return one_output(ctx.inputs[7].dtype, g.out);
}

class IntMatMulKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    slots_ = mat_slots(ctx.node);
    qlinear_ = ctx.node.op_type == "QLinearMatMul";
    SD_ASSIGN_OR_RETURN(g_, mat_geometry(ctx));
    Shape ba = g_.a, bb = g_.b;
    ba.rank -= 2, bb.rank -= 2;
    a_st_ = broadcast_strides(ba, g_.batch), b_st_ = broadcast_strides(bb, g_.batch);
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const TensorRef& a = in[slots_.a];
    const TensorRef& b = in[slots_.b];
    const TensorRef azp = has(in, slots_.a_zp) ? in[slots_.a_zp] : TensorRef{};
    const TensorRef bzp = has(in, slots_.b_zp) ? in[slots_.b_zp] : TensorRef{};
    const int64_t batches = g_.batch.numel(), m = g_.m, k = g_.k, n = g_.n;
    parallel_for(batches * m, ctx.threads, 1, [&](int64_t r0, int64_t r1) {
      std::vector<int32_t> acc(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bi = r / m, i = r % m;
        int64_t a_off = 0, b_off = 0, rest = bi;
        for (int d = g_.batch.rank - 1; d >= 0; --d) {
          const int64_t idx = rest % g_.batch[d];
          rest /= g_.batch[d];
          a_off += idx * a_st_[static_cast<size_t>(d)], b_off += idx * b_st_[static_cast<size_t>(d)];
        }
        a_off = a_off * m * k + i * k, b_off *= k * n;
        const int32_t az = azp.data ? int_at(azp, param_at(azp, i)) : 0;
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t kk = 0; kk < k; ++kk) {
          const int32_t av = int_at(a, a_off + kk) - az;
          for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * (int_at(b, b_off + kk * n + j) - (bzp.data ? int_at(bzp, param_at(bzp, j)) : 0));
        }
        const int64_t at = r * n;
        if (!qlinear_) {
          std::memcpy(out[0].as<int32_t>() + at, acc.data(), acc.size() * sizeof(int32_t));
          continue;
        }
        const float as = in[1].as<float>()[param_at(in[1], i)], ys = in[6].as<float>()[0];
        const int32_t yz = int_at(in[7], 0);
        for (int64_t j = 0; j < n; ++j) {
          const float mult = as * in[4].as<float>()[param_at(in[4], j)] / ys;
          const double v = acc[static_cast<size_t>(j)];
          if (out[0].dtype == DType::kUInt8) out[0].as<uint8_t>()[at + j] = requantize<uint8_t>(v, mult, yz);
          else out[0].as<int8_t>()[at + j] = requantize<int8_t>(v, mult, yz);
        }
      }
    });
    return ok();
  }

 private:
  static bool has(std::span<const TensorRef> in, size_t i) { return i < in.size() && in[i].data; }
  MatSlots slots_{};
  bool qlinear_ = false;
  MatGeometry g_;
  std::array<int64_t, Shape::kMaxRank> a_st_{}, b_st_{};
};

OpSchema schema(const char* name, int min_inputs, int min_opset, InferFn infer, KernelFactory create) {
  return make_schema(name, std::move(infer), std::move(create), min_inputs, min_opset);
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  r.add(schema("QuantizeLinear", 2, 10, infer_qdq, make_factory<QdqKernel>()));
  r.add(schema("DequantizeLinear", 2, 10, infer_qdq, make_factory<QdqKernel>()));
  r.add(schema("DynamicQuantizeLinear", 1, 11,
               [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
                 return std::vector<ValueType>{{DType::kUInt8, ctx.inputs[0].shape}, {DType::kFloat32, Shape{}}, {DType::kUInt8, Shape{}}};
               },
               make_factory<DynamicQuantizeKernel>()));
  r.add(schema("ConvInteger", 2, 10, infer_int_conv, make_factory<IntConvKernel>()));
  r.add(schema("QLinearConv", 8, 10, infer_int_conv, make_factory<IntConvKernel>()));
  r.add(schema("MatMulInteger", 2, 10, infer_int_matmul, make_factory<IntMatMulKernel>()));
  r.add(schema("QLinearMatMul", 8, 10, infer_int_matmul, make_factory<IntMatMulKernel>()));
}

}  // namespace sd::native::ops

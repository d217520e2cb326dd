// Resize / Upsample (nearest with every rounding and coordinate mode; linear), Pad (constant,
// reflect, edge), BatchNormalization in inference mode, InstanceNormalization.
#include <cmath>
#include <cstring>

#include <map>

#include "engine/native/layout_attrs.h"
#include "engine/native/op_util.h"
#include "engine/native/numeric.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

int min_inputs_of(const std::string& op) {
  static const std::map<std::string, int> n = {{"BatchNormalization", 5}, {"InstanceNormalization", 3}};
  auto it = n.find(op);
  return it == n.end() ? 1 : it->second;
}

OpSchema schema(const char* name, InferFn infer, KernelFactory create, int min_opset = 1, int max_opset = 99) {
  return make_schema(name, std::move(infer), std::move(create), min_inputs_of(name), min_opset, max_opset);
}

// ---- Resize
struct ResizePlan {
  Shape out;
  bool from_sizes = false;
  std::vector<double> scales;  // per dim, out/in as the coordinate transform uses it
};

Result<ResizePlan> resize_plan(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  ResizePlan p;
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  const bool upsample = ctx.node.op_type == "Upsample";
  if (upsample && ctx.opset < 9) {
    scales = ctx.node.attrs.get_floats("scales");
  } else {
    const size_t scales_at = (upsample || ctx.opset < 11) ? 1 : 2;
    if (has_input(ctx, scales_at) && ctx.inputs[scales_at].shape.numel() > 0) {
      if (!ctx.constants[scales_at]) return fail(ErrorCode::kUnsupported, ctx.describe() + ": scales must be known when the model is planned");
      scales = ctx.constants[scales_at]->to_float_vector();
    }
    if (!upsample && ctx.opset >= 11 && has_input(ctx, 3) && ctx.inputs[3].shape.numel() > 0) {
      SD_ASSIGN_OR_RETURN(sizes, constant_ints(ctx, 3, "sizes"));
    }
  }
  if (ctx.node.attrs.has("axes")) return fail(ErrorCode::kUnsupported, ctx.describe() + ": the axes attribute is not supported");
  p.out = in;
  p.scales.assign(static_cast<size_t>(in.rank), 1.0);
  if (!sizes.empty()) {
    p.from_sizes = true;
    if (static_cast<int>(sizes.size()) != in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": sizes do not match the rank");
    for (int i = 0; i < in.rank; ++i) {
      if (sizes[static_cast<size_t>(i)] < 0) return fail(ErrorCode::kModel, ctx.describe() + ": negative size");
      p.out[i] = sizes[static_cast<size_t>(i)];
      p.scales[static_cast<size_t>(i)] = in[i] ? static_cast<double>(p.out[i]) / static_cast<double>(in[i]) : 1.0;
    }
  } else {
    if (static_cast<int>(scales.size()) != in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": scales do not match the rank");
    for (int i = 0; i < in.rank; ++i) {
      const float sc = scales[static_cast<size_t>(i)];
      if (!(sc > 0.f) || !std::isfinite(sc)) return fail(ErrorCode::kModel, ctx.describe() + ": scales must be positive");
      p.scales[static_cast<size_t>(i)] = sc;
      const double len = std::floor(static_cast<double>(in[i]) * sc);
      if (!(len < 1e9)) return fail(ErrorCode::kModel, ctx.describe() + ": the output would be too large");
      p.out[i] = static_cast<int64_t>(len);
    }
  }
  return p;
}

class ResizeKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    // Bytes too for nearest (an int8 tensor kept int8 through the upsampling, passes/int8_dataflow.cpp),
    // and bf16 (a tensor kept bf16 under --precision bf16, precision.h).
    bytes_ = ctx.inputs[0].dtype == DType::kUInt8 || ctx.inputs[0].dtype == DType::kInt8;
    halves_ = ctx.inputs[0].dtype == DType::kBFloat16;
    if (ctx.inputs[0].dtype != DType::kFloat32 && !((bytes_ || halves_) && ctx.node.attrs.get_string("mode", "nearest") == "nearest"))
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 is supported (int8 / uint8 / bf16 with mode nearest)");
    SD_ASSIGN_OR_RETURN(p_, resize_plan(ctx));
    from_sizes_ = p_.from_sizes;
    in_ = ctx.inputs[0].shape;
    if (in_.rank < 1) return fail(ErrorCode::kModel, ctx.describe() + ": the input is a scalar");
    const auto& a = ctx.node.attrs;
    std::string mode = a.get_string("mode", "nearest");
    std::string ctm = a.get_string("coordinate_transformation_mode", ctx.opset >= 11 ? "half_pixel" : "asymmetric");
    std::string nm = a.get_string("nearest_mode", "round_prefer_floor");
    if (ctx.node.op_type == "Upsample" || ctx.opset < 11) ctm = "asymmetric", nm = mode == "nearest" ? "floor" : nm;
    if (mode == "linear" || mode == "bilinear") linear_ = true;
    else if (mode != "nearest") return fail(ErrorCode::kUnsupported, ctx.describe() + ": mode '" + mode + "' is not supported");
    if (ctm == "tf_crop_and_resize") return fail(ErrorCode::kUnsupported, ctx.describe() + ": tf_crop_and_resize is not supported");
    // Source coordinate of every output index, per dim.
    for (int d = 0; d < in_.rank; ++d) {
      const int64_t n_out = p_.out[d], n_in = in_[d];
      const double scale = p_.scales[static_cast<size_t>(d)];
      std::vector<int64_t> i0(static_cast<size_t>(n_out)), i1(static_cast<size_t>(n_out));
      std::vector<float> w(static_cast<size_t>(n_out));
      for (int64_t x = 0; x < n_out; ++x) {
        double src;
        // With scales given, ONNX's resized length is in * scale, not rounded (it matters for align_corners).
        const double len_out = from_sizes_ ? static_cast<double>(n_out) : static_cast<double>(n_in) * scale;
        if (ctm == "align_corners") src = len_out <= 1 ? 0 : static_cast<double>(x) * static_cast<double>(n_in - 1) / (len_out - 1);
        else if (ctm == "asymmetric") src = static_cast<double>(x) / scale;
        else if (ctm == "pytorch_half_pixel") src = n_out > 1 ? (static_cast<double>(x) + 0.5) / scale - 0.5 : 0;
        else if (ctm == "tf_half_pixel_for_nn") src = (static_cast<double>(x) + 0.5) / scale;
        else src = (static_cast<double>(x) + 0.5) / scale - 0.5;  // half_pixel
        src = std::clamp(src, -1.0, static_cast<double>(n_in));  // tiny scales: keep the casts below defined
        if (!linear_) {
          int64_t k;
          if (nm == "floor") k = static_cast<int64_t>(std::floor(src));
          else if (nm == "ceil") k = static_cast<int64_t>(std::ceil(src));
          else if (nm == "round_prefer_ceil") k = static_cast<int64_t>(std::floor(src + 0.5));
          else k = (src - std::floor(src) == 0.5) ? static_cast<int64_t>(std::floor(src)) : static_cast<int64_t>(std::round(src));
          i0[static_cast<size_t>(x)] = std::clamp<int64_t>(k, 0, n_in - 1);
        } else {
          double c = std::clamp(src, 0.0, static_cast<double>(n_in - 1));
          int64_t lo = static_cast<int64_t>(std::floor(c));
          i0[static_cast<size_t>(x)] = lo;
          i1[static_cast<size_t>(x)] = std::min(lo + 1, n_in - 1);
          w[static_cast<size_t>(x)] = static_cast<float>(c - static_cast<double>(lo));
        }
      }
      idx0_.push_back(std::move(i0));
      idx1_.push_back(std::move(i1));
      weight_.push_back(std::move(w));
    }
    st_ = contiguous_strides(in_);
    // Nearest with the last dim unchanged (channels-last upsampling: the last dim is C): each
    // output row is a copy of one input row, no per-element gather.
    copy_rows_ = !linear_ && p_.out[in_.rank - 1] == in_[in_.rank - 1];
    for (int64_t i = 0; copy_rows_ && i < in_[in_.rank - 1]; ++i)
      if (idx0_.back()[static_cast<size_t>(i)] != i) copy_rows_ = false;
    // The planner's strided destination (kDstPixelStride, exec/plan_concat.cpp): output rows of the
    // last dim that far apart, inside a Concat's output. Nearest only.
    dst_stride_ = ctx.node.attrs.get_int(kDstPixelStride, 0);
    if (dst_stride_ == p_.out[in_.rank - 1]) dst_stride_ = 0;
    if (dst_stride_ != 0 && (linear_ || dst_stride_ < p_.out[in_.rank - 1]))
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": a strided destination only for nearest, at least a row apart");
    if (linear_) {
      // Linear interpolation over the dims that change size; at most the last two.
      for (int d = 0; d < in_.rank; ++d)
        if (p_.out[d] != in_[d] && d < in_.rank - 2)
          return fail(ErrorCode::kUnsupported, ctx.describe() + ": linear resize of other than the last two dims is not supported");
    }
    return ok();
  }
  template <class T>
  void nearest(const T* x, T* y, int threads) const {
    const Shape& o = p_.out;
    const int r = o.rank;
    const int64_t inner = o[r - 1];
    const int64_t rows = o.numel() / inner;
    const auto& ix0 = idx0_[static_cast<size_t>(r - 1)];
    parallel_for(rows, threads, std::max<int64_t>(1, 8192 / inner), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        T* dst = y + row * (dst_stride_ != 0 ? dst_stride_ : inner);
        int64_t rem = row, off = 0;
        for (int d = r - 2; d >= 0; --d) {
          off += idx0_[static_cast<size_t>(d)][static_cast<size_t>(rem % o[d])] * st_[static_cast<size_t>(d)];
          rem /= o[d];
        }
        const T* src = x + off;
        if (copy_rows_) std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(T));
        else for (int64_t i = 0; i < inner; ++i) dst[i] = src[ix0[static_cast<size_t>(i)]];
      }
    });
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    if (bytes_) {
      if (p_.out.numel() != 0) nearest(static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(out[0].data), ctx.threads);
      return ok();
    }
    if (halves_) {
      if (p_.out.numel() != 0) nearest(static_cast<const uint16_t*>(in[0].data), static_cast<uint16_t*>(out[0].data), ctx.threads);
      return ok();
    }
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const Shape& o = p_.out;
    const int r = o.rank;
    if (o.numel() == 0) return ok();
    const int64_t inner = o[r - 1];
    const int64_t rows = o.numel() / inner;
    const auto& ix0 = idx0_[static_cast<size_t>(r - 1)];
    parallel_for(rows, ctx.threads, std::max<int64_t>(1, 8192 / inner), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        float* dst = y + row * (dst_stride_ != 0 ? dst_stride_ : inner);  // a stride: nearest only (init)
        if (!linear_) {
          int64_t rem = row, off = 0;
          for (int d = r - 2; d >= 0; --d) {
            off += idx0_[static_cast<size_t>(d)][static_cast<size_t>(rem % o[d])] * st_[static_cast<size_t>(d)];
            rem /= o[d];
          }
          const float* src = x + off;
          if (copy_rows_) std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(float));
          else for (int64_t i = 0; i < inner; ++i) dst[i] = src[ix0[static_cast<size_t>(i)]];
        } else {
          // Leading dims (same size in and out) then the row dim r-2 with weights.
          int64_t rem = row, off = 0;
          int64_t yr = 0;
          for (int d = r - 2; d >= 0; --d) {
            int64_t idx = rem % o[d];
            rem /= o[d];
            if (d == r - 2 && r >= 2) yr = idx;
            else off += idx * st_[static_cast<size_t>(d)];
          }
          const auto& ix1 = idx1_[static_cast<size_t>(r - 1)];
          const auto& wx = weight_[static_cast<size_t>(r - 1)];
          if (r >= 2) {
            const int64_t y0 = idx0_[static_cast<size_t>(r - 2)][static_cast<size_t>(yr)], y1 = idx1_[static_cast<size_t>(r - 2)][static_cast<size_t>(yr)];
            const float wy = weight_[static_cast<size_t>(r - 2)][static_cast<size_t>(yr)];
            const float* r0 = x + off + y0 * st_[static_cast<size_t>(r - 2)];
            const float* r1 = x + off + y1 * st_[static_cast<size_t>(r - 2)];
            for (int64_t i = 0; i < inner; ++i) {
              const size_t k = static_cast<size_t>(i);
              float top = r0[ix0[k]] + (r0[ix1[k]] - r0[ix0[k]]) * wx[k];
              float bot = r1[ix0[k]] + (r1[ix1[k]] - r1[ix0[k]]) * wx[k];
              dst[i] = top + (bot - top) * wy;
            }
          } else {
            for (int64_t i = 0; i < inner; ++i) {
              const size_t k = static_cast<size_t>(i);
              dst[i] = x[ix0[k]] + (x[ix1[k]] - x[ix0[k]]) * wx[k];
            }
          }
        }
      }
    });
    return ok();
  }

 private:
  ResizePlan p_;
  Shape in_;
  bool linear_ = false, from_sizes_ = false, copy_rows_ = false, bytes_ = false;
  bool halves_ = false;  // bf16 (nearest only)
  std::vector<std::vector<int64_t>> idx0_, idx1_;
  std::vector<std::vector<float>> weight_;
  std::array<int64_t, Shape::kMaxRank> st_{};
  int64_t dst_stride_ = 0;  // kDstPixelStride (0: dense)
};

// ---- Pad
struct PadPlan {
  Shape out;
  std::vector<int64_t> before;  // per dim (may be negative: a crop)
};

Result<PadPlan> pad_plan(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  std::vector<int64_t> pads;
  if (ctx.opset >= 11) { SD_ASSIGN_OR_RETURN(pads, constant_ints(ctx, 1, "pads")); }
  else pads = ctx.node.attrs.get_ints("pads");
  std::vector<int64_t> axes;
  if (ctx.opset >= 18 && has_input(ctx, 3)) { SD_ASSIGN_OR_RETURN(axes, constant_ints(ctx, 3, "axes")); }
  if (axes.empty())
    for (int i = 0; i < in.rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size()) return fail(ErrorCode::kModel, ctx.describe() + ": pads has the wrong length");
  PadPlan p;
  p.out = in;
  p.before.assign(static_cast<size_t>(in.rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    SD_ASSIGN_OR_RETURN(int ax, normalize_axis(axes[i], in.rank, ctx));
    p.before[static_cast<size_t>(ax)] = pads[i];
    p.out[ax] = in[ax] + pads[i] + pads[i + axes.size()];
    if (p.out[ax] < 0) return fail(ErrorCode::kModel, ctx.describe() + ": pads crop more than the input");
  }
  return p;
}

class PadKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.inputs[0].dtype != DType::kFloat32 && ctx.inputs[0].dtype != DType::kInt64 && ctx.inputs[0].dtype != DType::kInt32)
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": element type not supported");
    SD_TRY(same_dtype(ctx, {2}, 0, true));  // the constant value
    SD_ASSIGN_OR_RETURN(p_, pad_plan(ctx));
    in_ = ctx.inputs[0].shape;
    es_ = dtype_size(ctx.inputs[0].dtype);
    dtype_ = ctx.inputs[0].dtype;
    mode_ = ctx.node.attrs.get_string("mode", "constant");
    if (mode_ != "constant" && mode_ != "reflect" && mode_ != "edge")
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": mode '" + mode_ + "' is not supported");
    value_ = ctx.opset < 11 ? ctx.node.attrs.get_float("value", 0.f) : 0.f;
    st_ = contiguous_strides(in_);
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const auto* src = static_cast<const unsigned char*>(in[0].data);
    auto* dst = static_cast<unsigned char*>(out[0].data);
    unsigned char fill[8] = {};
    double cv = value_;
    if (in.size() > 2 && in[2].data) cv = dtype_ == DType::kFloat32 ? in[2].as<float>()[0] : static_cast<double>(dtype_ == DType::kInt64 ? in[2].as<int64_t>()[0] : in[2].as<int32_t>()[0]);
    if (dtype_ == DType::kFloat32) { float f = static_cast<float>(cv); std::memcpy(fill, &f, 4); }
    else if (dtype_ == DType::kInt64) { int64_t v = saturate_cast<int64_t>(cv); std::memcpy(fill, &v, 8); }
    else { int32_t v = saturate_cast<int32_t>(cv); std::memcpy(fill, &v, 4); }
    const Shape& o = p_.out;
    const int64_t n = o.numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = 0;
      bool outside = false;
      for (int d = o.rank - 1; d >= 0; --d) {
        int64_t k = rem % o[d] - p_.before[static_cast<size_t>(d)];
        rem /= o[d];
        const int64_t len = in_[d];
        if (k < 0 || k >= len) {
          if (mode_ == "constant" || len == 0) { outside = true; break; }
          if (mode_ == "edge") k = std::clamp<int64_t>(k, 0, len - 1);
          else {  // reflect, without repeating the edge
            const int64_t period = 2 * (len - 1);
            if (period == 0) k = 0;
            else {
              k = ((k % period) + period) % period;
              if (k >= len) k = period - k;
            }
          }
        }
        off += k * st_[static_cast<size_t>(d)];
      }
      std::memcpy(dst + static_cast<size_t>(i) * es_, outside ? fill : src + static_cast<size_t>(off) * es_, es_);
    }
    return ok();
  }

 private:
  PadPlan p_;
  Shape in_;
  size_t es_ = 4;
  DType dtype_ = DType::kFloat32;
  std::string mode_;
  float value_ = 0;
  std::array<int64_t, Shape::kMaxRank> st_{};
};

// ---- BatchNormalization (inference) and InstanceNormalization: per-channel affine over axis 1.
class ChannelNormKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.inputs[0].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 is supported");
    SD_TRY(same_dtype(ctx));
    const Shape& s = ctx.inputs[0].shape;
    instance_ = ctx.node.op_type == "InstanceNormalization";
    if (!instance_ && ctx.node.attrs.get_int("training_mode", 0))
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": training mode is not supported");
    n_ = s.rank > 0 ? s[0] : 1;
    c_ = s.rank > 1 ? s[1] : 1;
    inner_ = 1;
    for (int i = 2; i < s.rank; ++i) inner_ *= s[i];
    eps_ = ctx.node.attrs.get_float("epsilon", 1e-5f);
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const float* scale = in[1].as<float>();
    const float* bias = in[2].as<float>();
    for (int64_t b = 0; b < n_; ++b)
      for (int64_t c = 0; c < c_; ++c) {
        const float* px = x + (b * c_ + c) * inner_;
        float* py = y + (b * c_ + c) * inner_;
        double mean, var;
        if (instance_) {
          double s = 0, s2 = 0;
          for (int64_t i = 0; i < inner_; ++i) s += px[i];
          mean = s / static_cast<double>(inner_);
          for (int64_t i = 0; i < inner_; ++i) s2 += (px[i] - mean) * (px[i] - mean);
          var = s2 / static_cast<double>(inner_);
        } else {
          mean = in[3].as<float>()[c];
          var = in[4].as<float>()[c];
        }
        const float k = static_cast<float>(scale[c] / std::sqrt(var + eps_));
        const float m = static_cast<float>(bias[c] - mean * k);
        for (int64_t i = 0; i < inner_; ++i) py[i] = px[i] * k + m;
      }
    return ok();
  }

 private:
  bool instance_ = false;
  int64_t n_ = 1, c_ = 1, inner_ = 1;
  float eps_ = 1e-5f;
};

}  // namespace

void register_misc_ops(OpRegistry& r) {
  auto resize_infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    SD_ASSIGN_OR_RETURN(auto p, resize_plan(ctx));
    return one_output(ctx.inputs[0].dtype, p.out);
  };
  r.add(schema("Resize", resize_infer, make_factory<ResizeKernel>(), 10));
  r.add(schema("Upsample", resize_infer, make_factory<ResizeKernel>(), 7, 9));
  r.add(schema("Pad", [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    SD_ASSIGN_OR_RETURN(auto p, pad_plan(ctx));
    return one_output(ctx.inputs[0].dtype, p.out);
  }, make_factory<PadKernel>()));
  auto same = [](const OpContext& ctx) -> Result<std::vector<ValueType>> { return one_output(ctx.inputs[0].dtype, ctx.inputs[0].shape); };
  r.add(schema("BatchNormalization", same, make_factory<ChannelNormKernel>()));
  r.add(schema("InstanceNormalization", same, make_factory<ChannelNormKernel>()));
}

}  // namespace sd::native::ops

// Softmax / LogSoftmax, ReduceMax/Min/Sum/Mean, ArgMax/ArgMin, TopK (float32).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/native/cpu/fast_math.h"
#include <map>

#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

// 64-byte vectors passed between inline functions (the 16-wide softmax rows): see fast_math.h.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sd::native::ops {
namespace {

OpSchema schema(const char* name, InferFn infer, KernelFactory create, int min_opset = 1, int max_opset = 99) {
  return make_schema(name, std::move(infer), std::move(create), 1, min_opset, max_opset);
}

Status need_float(const OpContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kFloat32)
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": element type " + dtype_name(ctx.inputs[0].dtype) + " is not supported");
  return ok();
}

// ---- Softmax: opset < 13 coerces to 2-D at `axis` (default 1); from 13 it is one axis (default -1).
class SoftmaxKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_TRY(need_float(ctx));
    const Shape& s = ctx.inputs[0].shape;
    log_ = ctx.node.op_type == "LogSoftmax";
    const int64_t def = ctx.opset >= 13 ? -1 : 1;
    SD_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node.attrs.get_int("axis", def), s.rank, ctx));
    outer_ = 1, n_ = 1, inner_ = 1;
    if (ctx.opset >= 13) {
      for (int i = 0; i < axis; ++i) outer_ *= s[i];
      n_ = s.rank ? s[axis] : 1;
      for (int i = axis + 1; i < s.rank; ++i) inner_ *= s[i];
    } else {
      for (int i = 0; i < axis; ++i) outer_ *= s[i];
      for (int i = axis; i < s.rank; ++i) n_ *= s[i];
    }
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t n = n_, inner = inner_;
    const bool lg = log_;
    if (inner == 1 && n == 16 && !lg) {
      // Rows of exactly one vector (DFL's 16 bins, thousands of rows): max, exp, sum and scale in
      // registers, the reductions by halving.
      parallel_for(outer_, ctx.threads, 256, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          f32x16 v;
          std::memcpy(&v, x + o * 16, sizeof v);
          const f32x16 ex = fast_exp_of(v - hmax(v));
          const f32x16 r = ex * (1.f / hsum(ex));
          std::memcpy(y + o * 16, &r, sizeof r);
        }
      });
      return ok();
    }
    if (inner == 1) {
      parallel_for(outer_, ctx.threads, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const float* px = x + o * n;
          float* py = y + o * n;
          // simd reductions: the compiler may reorder the max and the sum across lanes (a plain
          // loop is a serial chain of scalar adds: DFL's 16-wide rows ran at 7 cycles an element).
          float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
          for (int64_t k = 0; k < n; ++k) m = std::max(m, px[k]);
          float sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t k = 0; k < n; ++k) sum += (py[k] = fast_exp(px[k] - m));
          if (lg) {
            const float ls = std::log(sum);
            for (int64_t k = 0; k < n; ++k) py[k] = px[k] - m - ls;
          } else {
            const float inv = 1.f / sum;
            for (int64_t k = 0; k < n; ++k) py[k] *= inv;
          }
        }
      });
      return ok();
    }
    // The axis is not the last one (DFL's [1, 16, 4, 8400] over axis 1): walk the axis row by row
    // with the contiguous inner dimension as the vector, keeping max and sum in per-column strips.
    constexpr int64_t kStrip = 1024;
    const int64_t strips = (inner + kStrip - 1) / kStrip;
    parallel_for(outer_ * strips, ctx.threads, 1, [&](int64_t b, int64_t e) {
      float m[kStrip], sum[kStrip];
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / strips, i0 = (t % strips) * kStrip, len = std::min(kStrip, inner - i0);
        const float* px = x + o * n * inner + i0;
        float* py = y + o * n * inner + i0;
        for (int64_t i = 0; i < len; ++i) m[i] = px[i], sum[i] = 0;
        for (int64_t k = 1; k < n; ++k)
          for (int64_t i = 0; i < len; ++i) m[i] = std::max(m[i], px[k * inner + i]);
        for (int64_t k = 0; k < n; ++k)
          for (int64_t i = 0; i < len; ++i) sum[i] += (py[k * inner + i] = fast_exp(px[k * inner + i] - m[i]));
        if (lg) {
          for (int64_t i = 0; i < len; ++i) sum[i] = std::log(sum[i]);
          for (int64_t k = 0; k < n; ++k)
            for (int64_t i = 0; i < len; ++i) py[k * inner + i] = px[k * inner + i] - m[i] - sum[i];
        } else {
          for (int64_t i = 0; i < len; ++i) sum[i] = 1.f / sum[i];
          for (int64_t k = 0; k < n; ++k)
            for (int64_t i = 0; i < len; ++i) py[k * inner + i] *= sum[i];
        }
      }
    });
    return ok();
  }

 private:
  bool log_ = false;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

// ---- Reductions over any set of axes: the input viewed as [outer..., reduced..., inner...] is
// handled generally by iterating the output and summing over the reduced index space.
enum class Red { kMax, kMin, kSum, kMean, kProd, kL2, kSumSquare };

struct ReducePlan {
  Shape out;                        // with or without kept dims
  Shape kept;                       // the input shape with reduced dims set to 1
  std::vector<int> axes;            // reduced axes, sorted
  bool empty_noop = false;
};

Result<ReducePlan> reduce_plan(const OpContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  std::vector<int64_t> axes;
  const bool axes_input = (ctx.opset >= 18) || (ctx.node.op_type == "ReduceSum" && ctx.opset >= 13);
  if (axes_input) {
    if (has_input(ctx, 1)) { SD_ASSIGN_OR_RETURN(axes, constant_ints(ctx, 1, "axes")); }
  } else {
    axes = ctx.node.attrs.get_ints("axes");
  }
  ReducePlan p;
  if (axes.empty()) {
    if (ctx.node.attrs.get_int("noop_with_empty_axes", 0)) p.empty_noop = true;
    else for (int i = 0; i < s.rank; ++i) axes.push_back(i);
  }
  for (int64_t a : axes) {
    SD_ASSIGN_OR_RETURN(int ax, normalize_axis(a, s.rank, ctx));
    p.axes.push_back(ax);
  }
  std::sort(p.axes.begin(), p.axes.end());
  p.axes.erase(std::unique(p.axes.begin(), p.axes.end()), p.axes.end());
  const bool keep = ctx.node.attrs.get_int("keepdims", 1) != 0;
  p.kept = s;
  for (int a : p.axes) p.kept[a] = 1;
  if (keep || p.empty_noop) {
    p.out = p.empty_noop ? s : p.kept;
  } else {
    std::vector<int64_t> o;
    for (int i = 0; i < s.rank; ++i)
      if (!std::binary_search(p.axes.begin(), p.axes.end(), i)) o.push_back(s[i]);
    p.out = Shape::from(o.begin(), o.end());
  }
  return p;
}

class ReduceKernel : public Kernel {
 public:
  explicit ReduceKernel(Red op) : op_(op) {}
  Status init(const OpContext& ctx) {
    SD_TRY(need_float(ctx));
    SD_ASSIGN_OR_RETURN(p_, reduce_plan(ctx));
    in_ = ctx.inputs[0].shape;
    st_ = contiguous_strides(in_);
    count_ = 1;
    for (int a : p_.axes) count_ *= in_[a];
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    if (p_.empty_noop) {
      std::memcpy(y, x, in[0].bytes());
      return ok();
    }
    const Shape& k = p_.kept;
    const int64_t n_out = k.numel();
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t rem = o, base = 0;
      for (int d = k.rank - 1; d >= 0; --d) {
        base += (rem % k[d]) * st_[static_cast<size_t>(d)];
        rem /= k[d];
      }
      double acc = op_ == Red::kMax ? -INFINITY : (op_ == Red::kMin ? INFINITY : (op_ == Red::kProd ? 1.0 : 0.0));
      for (int64_t r = 0; r < count_; ++r) {
        int64_t rr = r, off = base;
        for (int i = static_cast<int>(p_.axes.size()) - 1; i >= 0; --i) {
          int a = p_.axes[static_cast<size_t>(i)];
          off += (rr % in_[a]) * st_[static_cast<size_t>(a)];
          rr /= in_[a];
        }
        const double v = x[off];
        switch (op_) {
          case Red::kMax: acc = std::max(acc, v); break;
          case Red::kMin: acc = std::min(acc, v); break;
          case Red::kProd: acc *= v; break;
          case Red::kL2:
          case Red::kSumSquare: acc += v * v; break;
          default: acc += v; break;
        }
      }
      if (op_ == Red::kMean) acc /= static_cast<double>(std::max<int64_t>(count_, 1));
      if (op_ == Red::kL2) acc = std::sqrt(acc);
      y[o] = static_cast<float>(acc);
    }
    return ok();
  }

 private:
  Red op_;
  ReducePlan p_;
  Shape in_;
  std::array<int64_t, Shape::kMaxRank> st_{};
  int64_t count_ = 1;
};

void add_reduce(OpRegistry& r, const char* name, Red op) {
  r.add(schema(
      name,
      [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
        SD_ASSIGN_OR_RETURN(auto p, reduce_plan(ctx));
        return one_output(ctx.inputs[0].dtype, p.out);
      },
      [op](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
        auto k = std::make_unique<ReduceKernel>(op);
        SD_TRY(k->init(ctx));
        return std::unique_ptr<Kernel>(std::move(k));
      }));
}

// ---- ArgMax / ArgMin (int64 output)
struct ArgPlan {
  Shape out;
  int64_t outer = 1, n = 1, inner = 1;
};

Result<ArgPlan> arg_plan(const OpContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node.attrs.get_int("axis", 0), s.rank, ctx));
  ArgPlan p;
  for (int i = 0; i < axis; ++i) p.outer *= s[i];
  p.n = s[axis];
  for (int i = axis + 1; i < s.rank; ++i) p.inner *= s[i];
  p.out = s;
  if (ctx.node.attrs.get_int("keepdims", 1)) {
    p.out[axis] = 1;
  } else {
    std::vector<int64_t> o;
    for (int i = 0; i < s.rank; ++i)
      if (i != axis) o.push_back(s[i]);
    p.out = Shape::from(o.begin(), o.end());
  }
  return p;
}

class ArgKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_TRY(need_float(ctx));
    SD_ASSIGN_OR_RETURN(p_, arg_plan(ctx));
    max_ = ctx.node.op_type == "ArgMax";
    last_ = ctx.node.attrs.get_int("select_last_index", 0) != 0;
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const float* x = in[0].as<float>();
    int64_t* y = out[0].as<int64_t>();
    for (int64_t o = 0; o < p_.outer; ++o)
      for (int64_t i = 0; i < p_.inner; ++i) {
        int64_t best = 0;
        float bv = x[o * p_.n * p_.inner + i];
        for (int64_t k = 1; k < p_.n; ++k) {
          float v = x[(o * p_.n + k) * p_.inner + i];
          bool better = max_ ? (last_ ? v >= bv : v > bv) : (last_ ? v <= bv : v < bv);
          if (better) { bv = v; best = k; }
        }
        y[o * p_.inner + i] = best;
      }
    return ok();
  }

 private:
  ArgPlan p_;
  bool max_ = true, last_ = false;
};

// ---- TopK (values float32, indices int64), k from input (opset >= 10) or attribute.
class TopKKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_TRY(need_float(ctx));
    const Shape& s = ctx.inputs[0].shape;
    SD_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node.attrs.get_int("axis", -1), s.rank, ctx));
    for (int i = 0; i < axis; ++i) outer_ *= s[i];
    n_ = s[axis];
    for (int i = axis + 1; i < s.rank; ++i) inner_ *= s[i];
    k_ = ctx.outputs[0].shape[axis];
    largest_ = ctx.node.attrs.get_int("largest", 1) != 0;
    order_.resize(static_cast<size_t>(n_));
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const float* x = in[0].as<float>();
    float* v = out[0].as<float>();
    int64_t* idx = out[1].as<int64_t>();
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t i = 0; i < inner_; ++i) {
        auto at = [&](int64_t k) { return x[(o * n_ + k) * inner_ + i]; };
        std::iota(order_.begin(), order_.end(), 0);
        auto cmp = [&](int64_t a, int64_t b) {
          float fa = at(a), fb = at(b);
          if (fa != fb) return largest_ ? fa > fb : fa < fb;
          return a < b;  // ties: the lower index first, as ONNX specifies
        };
        std::partial_sort(order_.begin(), order_.begin() + k_, order_.end(), cmp);
        for (int64_t k = 0; k < k_; ++k) {
          v[(o * k_ + k) * inner_ + i] = at(order_[static_cast<size_t>(k)]);
          idx[(o * k_ + k) * inner_ + i] = order_[static_cast<size_t>(k)];
        }
      }
    return ok();
  }

 private:
  int64_t outer_ = 1, n_ = 1, inner_ = 1, k_ = 1;
  bool largest_ = true;
  std::vector<int64_t> order_;
};

Result<std::vector<ValueType>> infer_topk(const OpContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node.attrs.get_int("axis", -1), s.rank, ctx));
  int64_t k = ctx.node.attrs.get_int("k", -1);
  if (ctx.opset >= 10) {
    SD_ASSIGN_OR_RETURN(auto kv, constant_ints(ctx, 1, "K"));
    if (kv.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": empty K");
    k = kv[0];
  }
  if (k < 0 || k > s[axis]) return fail(ErrorCode::kModel, ctx.describe() + ": K " + std::to_string(k) + " out of range");
  Shape o = s;
  o[axis] = k;
  return std::vector<ValueType>{{DType::kFloat32, o}, {DType::kInt64, o}};
}

}  // namespace

void register_data_ops(OpRegistry& r) {
  auto softmax_infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> { return one_output(ctx.inputs[0].dtype, ctx.inputs[0].shape); };
  r.add(schema("Softmax", softmax_infer, make_factory<SoftmaxKernel>()));
  r.add(schema("LogSoftmax", softmax_infer, make_factory<SoftmaxKernel>()));
  add_reduce(r, "ReduceMax", Red::kMax);
  add_reduce(r, "ReduceMin", Red::kMin);
  add_reduce(r, "ReduceSum", Red::kSum);
  add_reduce(r, "ReduceMean", Red::kMean);
  add_reduce(r, "ReduceProd", Red::kProd);
  add_reduce(r, "ReduceL2", Red::kL2);
  add_reduce(r, "ReduceSumSquare", Red::kSumSquare);
  auto arg_infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    SD_ASSIGN_OR_RETURN(auto p, arg_plan(ctx));
    return one_output(DType::kInt64, p.out);
  };
  r.add(schema("ArgMax", arg_infer, make_factory<ArgKernel>()));
  r.add(schema("ArgMin", arg_infer, make_factory<ArgKernel>()));
  r.add(schema("TopK", infer_topk, make_factory<TopKKernel>()));
}

}  // namespace sd::native::ops

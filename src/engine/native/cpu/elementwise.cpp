// Elementwise ops with numpy broadcasting: arithmetic, comparisons, logic, Where, Min/Max, and
// the unary activations. Broadcast strides are computed once per plan; the inner loop runs over
// the last dimension with contiguous / broadcast-scalar fast paths the compiler vectorizes.
#include <cmath>
#include <cstring>

#include "engine/native/numeric.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

using Strides = std::array<int64_t, Shape::kMaxRank>;

// Runs f(out_row, a_row, b_row, a_inner_stride, b_inner_stride, inner) over the rows of the output.
template <class RowFn>
void for_each_row(const Shape& os, const Strides& sa, const Strides& sb, int threads, RowFn&& row) {
  const int rank = os.rank;
  if (rank == 0) {
    row(0, 0, 0, 0, 0, 1);
    return;
  }
  const int64_t inner = os[rank - 1];
  if (inner == 0) return;
  const int64_t outer = os.numel() / inner;
  parallel_for(outer, threads, std::max<int64_t>(1, 32768 / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t o = r0; o < r1; ++o) {
      int64_t rem = o, oa = 0, ob = 0;
      for (int d = rank - 2; d >= 0; --d) {
        int64_t idx = rem % os[d];
        rem /= os[d];
        oa += idx * sa[static_cast<size_t>(d)];
        ob += idx * sb[static_cast<size_t>(d)];
      }
      row(o * inner, oa, ob, sa[static_cast<size_t>(rank - 1)], sb[static_cast<size_t>(rank - 1)], inner);
    }
  });
}

template <class T, class R, class F>
void binary_loop(const T* a, const T* b, R* out, const Shape& os, const Strides& sa, const Strides& sb, int threads, F f) {
  for_each_row(os, sa, sb, threads, [&](int64_t o, int64_t oa, int64_t ob, int64_t ia, int64_t ib, int64_t n) {
    const T* pa = a + oa;
    const T* pb = b + ob;
    R* po = out + o;
    if (ia == 1 && ib == 1) {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    } else if (ia == 1) {
      const T vb = pb[0];
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], vb);
    } else if (ib == 1) {
      const T va = pa[0];
      for (int64_t i = 0; i < n; ++i) po[i] = f(va, pb[i]);
    } else {
      const R v = f(pa[0], pb[0]);
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
  });
}

enum class BinOp { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kMod, kEqual, kLess, kGreater, kLessEq, kGreaterEq, kAnd, kOr, kXor };

bool is_comparison(BinOp op) {
  return op == BinOp::kEqual || op == BinOp::kLess || op == BinOp::kGreater || op == BinOp::kLessEq || op == BinOp::kGreaterEq;
}
bool is_logic(BinOp op) { return op == BinOp::kAnd || op == BinOp::kOr || op == BinOp::kXor; }

// For INT_MIN / -1 and INT_MIN % -1, which overflow.
template <class T>
bool is_minus_one(T v) {
  if constexpr (std::is_signed_v<T>) return v == T(-1);
  else return false;
}

template <class T>
T int_div(T a, T b) {  // ONNX Div on integers truncates; a zero divisor gives 0 here, not a crash
  if (b == 0) return T(0);
  if (is_minus_one(b)) return wrapping_neg(a);
  return static_cast<T>(a / b);
}

template <class T>
void run_arith(BinOp op, const T* a, const T* b, T* o, const Shape& os, const Strides& sa, const Strides& sb, int th, int64_t fmod_flag) {
  switch (op) {
    case BinOp::kAdd: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return wrapping_add(x, y); }); break;
    case BinOp::kSub: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return wrapping_sub(x, y); }); break;
    case BinOp::kMul: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return wrapping_mul(x, y); }); break;
    case BinOp::kDiv:
      if constexpr (std::is_floating_point_v<T>) binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x / y; });
      else binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return int_div(x, y); });
      break;
    case BinOp::kPow:
      binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) {
        if constexpr (std::is_floating_point_v<T>) {
          if (y == T(2)) return x * x;
          return static_cast<T>(std::pow(x, y));
        } else {
          return saturate_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
      });
      break;
    case BinOp::kMax: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x > y || (x != x) ? x : y; }); break;
    case BinOp::kMin: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x < y || (x != x) ? x : y; }); break;
    case BinOp::kMod:
      if constexpr (std::is_floating_point_v<T>) {
        binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return static_cast<T>(std::fmod(x, y)); });
      } else if (fmod_flag) {
        binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return y == 0 || is_minus_one(y) ? T(0) : static_cast<T>(x % y); });
      } else {
        binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) {
          if (y == 0 || is_minus_one(y)) return T(0);
          T m = static_cast<T>(x % y);
          return (m != 0 && ((m < 0) != (y < 0))) ? static_cast<T>(m + y) : m;
        });
      }
      break;
    default: break;
  }
}

template <class T>
void run_compare(BinOp op, const T* a, const T* b, bool* o, const Shape& os, const Strides& sa, const Strides& sb, int th) {
  switch (op) {
    case BinOp::kEqual: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x == y; }); break;
    case BinOp::kLess: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x < y; }); break;
    case BinOp::kGreater: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x > y; }); break;
    case BinOp::kLessEq: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x <= y; }); break;
    case BinOp::kGreaterEq: binary_loop(a, b, o, os, sa, sb, th, [](T x, T y) { return x >= y; }); break;
    default: break;
  }
}

class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(BinOp op) : op_(op) {}
  Status init(const OpContext& ctx) {
    dtype_ = ctx.inputs[0].dtype;
    out_ = ctx.outputs[0].shape;
    sa_ = broadcast_strides(ctx.inputs[0].shape, out_);
    sb_ = broadcast_strides(ctx.inputs[1].shape, out_);
    fmod_ = ctx.node.attrs.get_int("fmod", 0);
    bool ok_type = false;
    if (is_logic(op_)) ok_type = dtype_ == DType::kBool;
    else if (is_comparison(op_)) ok_type = dtype_ == DType::kFloat32 || dtype_ == DType::kInt64 || dtype_ == DType::kInt32 || dtype_ == DType::kBool;
    else ok_type = dtype_ == DType::kFloat32 || dtype_ == DType::kInt64 || dtype_ == DType::kInt32 || dtype_ == DType::kFloat64 ||
                   dtype_ == DType::kUInt8 || dtype_ == DType::kInt8;
    if (!ok_type) return fail(ErrorCode::kUnsupported, ctx.describe() + ": element type " + dtype_name(dtype_) + " is not supported");
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const int th = ctx.threads;
    if (is_logic(op_)) {
      auto* a = in[0].as<bool>();
      auto* b = in[1].as<bool>();
      auto* o = out[0].as<bool>();
      if (op_ == BinOp::kAnd) binary_loop(a, b, o, out_, sa_, sb_, th, [](bool x, bool y) { return x && y; });
      else if (op_ == BinOp::kOr) binary_loop(a, b, o, out_, sa_, sb_, th, [](bool x, bool y) { return x || y; });
      else binary_loop(a, b, o, out_, sa_, sb_, th, [](bool x, bool y) { return x != y; });
      return ok();
    }
    if (is_comparison(op_)) {
      switch (dtype_) {
        case DType::kFloat32: run_compare(op_, in[0].as<float>(), in[1].as<float>(), out[0].as<bool>(), out_, sa_, sb_, th); break;
        case DType::kInt64: run_compare(op_, in[0].as<int64_t>(), in[1].as<int64_t>(), out[0].as<bool>(), out_, sa_, sb_, th); break;
        case DType::kInt32: run_compare(op_, in[0].as<int32_t>(), in[1].as<int32_t>(), out[0].as<bool>(), out_, sa_, sb_, th); break;
        case DType::kBool: run_compare(op_, in[0].as<bool>(), in[1].as<bool>(), out[0].as<bool>(), out_, sa_, sb_, th); break;
        default: break;
      }
      return ok();
    }
    switch (dtype_) {
      case DType::kFloat32: run_arith(op_, in[0].as<float>(), in[1].as<float>(), out[0].as<float>(), out_, sa_, sb_, th, fmod_); break;
      case DType::kFloat64: run_arith(op_, in[0].as<double>(), in[1].as<double>(), out[0].as<double>(), out_, sa_, sb_, th, fmod_); break;
      case DType::kInt64: run_arith(op_, in[0].as<int64_t>(), in[1].as<int64_t>(), out[0].as<int64_t>(), out_, sa_, sb_, th, fmod_); break;
      case DType::kInt32: run_arith(op_, in[0].as<int32_t>(), in[1].as<int32_t>(), out[0].as<int32_t>(), out_, sa_, sb_, th, fmod_); break;
      case DType::kUInt8: run_arith(op_, in[0].as<uint8_t>(), in[1].as<uint8_t>(), out[0].as<uint8_t>(), out_, sa_, sb_, th, fmod_); break;
      case DType::kInt8: run_arith(op_, in[0].as<int8_t>(), in[1].as<int8_t>(), out[0].as<int8_t>(), out_, sa_, sb_, th, fmod_); break;
      default: break;
    }
    return ok();
  }

 private:
  BinOp op_;
  DType dtype_ = DType::kFloat32;
  Shape out_;
  Strides sa_{}, sb_{};
  int64_t fmod_ = 0;
};

void add_binary(OpRegistry& r, const char* name, BinOp op) {
  OpSchema s;
  s.op_type = name;
  s.min_inputs = 2;
  s.infer = [op](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    if (ctx.inputs.size() != 2) return fail(ErrorCode::kModel, ctx.describe() + ": needs 2 inputs");
    if (ctx.inputs[0].dtype != ctx.inputs[1].dtype)
      return fail(ErrorCode::kModel, ctx.describe() + ": inputs of different types (" + dtype_name(ctx.inputs[0].dtype) + ", " +
                                         dtype_name(ctx.inputs[1].dtype) + ")");
    SD_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx));
    return one_output(is_comparison(op) || is_logic(op) ? DType::kBool : ctx.inputs[0].dtype, out);
  };
  s.create = [op](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    auto k = std::make_unique<BinaryKernel>(op);
    SD_TRY(k->init(ctx));
    return std::unique_ptr<Kernel>(std::move(k));
  };
  r.add(std::move(s));
}

// ---- n-ary Max / Min / Sum / Mean: folded pairwise into the output.
class NaryKernel : public Kernel {
 public:
  explicit NaryKernel(BinOp op, bool mean) : op_(op), mean_(mean) {}
  Status init(const OpContext& ctx) {
    dtype_ = ctx.inputs[0].dtype;
    if (dtype_ != DType::kFloat32 && dtype_ != DType::kInt64 && dtype_ != DType::kInt32 && dtype_ != DType::kFloat64 &&
        dtype_ != DType::kInt8 && dtype_ != DType::kUInt8)
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": element type " + dtype_name(dtype_) + " is not supported");
    if (mean_ && dtype_ != DType::kFloat32 && dtype_ != DType::kFloat64)
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": Mean of integers is not supported");
    out_ = ctx.outputs[0].shape;
    for (const auto& in : ctx.inputs) strides_.push_back(broadcast_strides(in.shape, out_));
    return ok();
  }
  template <class T>
  void go(std::span<const TensorRef> in, T* o, int threads) {
    Strides id = contiguous_strides(out_);
    Strides zero{};
    T z{};
    binary_loop(in[0].as<T>(), &z, o, out_, strides_[0], zero, threads, [](T x, T) { return x; });
    for (size_t i = 1; i < in.size(); ++i) {
      const T* acc = o;
      switch (op_) {
        case BinOp::kMax: binary_loop(acc, in[i].as<T>(), o, out_, id, strides_[i], threads, [](T x, T y) { return x > y || x != x ? x : y; }); break;
        case BinOp::kMin: binary_loop(acc, in[i].as<T>(), o, out_, id, strides_[i], threads, [](T x, T y) { return x < y || x != x ? x : y; }); break;
        default: binary_loop(acc, in[i].as<T>(), o, out_, id, strides_[i], threads, [](T x, T y) { return wrapping_add(x, y); }); break;
      }
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (mean_) {
        const T inv = T(1) / static_cast<T>(in.size());
        for (int64_t i = 0; i < out_.numel(); ++i) o[i] *= inv;
      }
    }
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    switch (dtype_) {
      case DType::kFloat32: go(in, out[0].as<float>(), ctx.threads); break;
      case DType::kFloat64: go(in, out[0].as<double>(), ctx.threads); break;
      case DType::kInt64: go(in, out[0].as<int64_t>(), ctx.threads); break;
      case DType::kInt32: go(in, out[0].as<int32_t>(), ctx.threads); break;
      case DType::kInt8: go(in, out[0].as<int8_t>(), ctx.threads); break;
      case DType::kUInt8: go(in, out[0].as<uint8_t>(), ctx.threads); break;
      default: break;
    }
    return ok();
  }

 private:
  BinOp op_;
  bool mean_;
  DType dtype_ = DType::kFloat32;
  Shape out_;
  std::vector<Strides> strides_;
};

void add_nary(OpRegistry& r, const char* name, BinOp op, bool mean) {
  OpSchema s;
  s.op_type = name;
  s.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    if (ctx.inputs.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": needs inputs");
    SD_TRY(same_dtype(ctx));
    Shape out = ctx.inputs[0].shape;
    for (size_t i = 1; i < ctx.inputs.size(); ++i) { SD_ASSIGN_OR_RETURN(out, broadcast_shapes(out, ctx.inputs[i].shape, ctx)); }
    return one_output(ctx.inputs[0].dtype, out);
  };
  s.create = [op, mean](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    auto k = std::make_unique<NaryKernel>(op, mean);
    SD_TRY(k->init(ctx));
    return std::unique_ptr<Kernel>(std::move(k));
  };
  r.add(std::move(s));
}

// ---- Where(cond, x, y)
class WhereKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    dtype_ = ctx.inputs[1].dtype;
    out_ = ctx.outputs[0].shape;
    for (int i = 0; i < 3; ++i) st_[static_cast<size_t>(i)] = broadcast_strides(ctx.inputs[static_cast<size_t>(i)].shape, out_);
    if (dtype_size(dtype_) == 0) return fail(ErrorCode::kUnsupported, ctx.describe() + ": unsupported type");
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const bool* c = in[0].as<bool>();
    const auto* x = static_cast<const unsigned char*>(in[1].data);
    const auto* y = static_cast<const unsigned char*>(in[2].data);
    auto* o = static_cast<unsigned char*>(out[0].data);
    const size_t es = dtype_size(dtype_);
    const int64_t n = out_.numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, oc = 0, ox = 0, oy = 0;
      for (int d = out_.rank - 1; d >= 0; --d) {
        int64_t idx = rem % out_[d];
        rem /= out_[d];
        oc += idx * st_[0][static_cast<size_t>(d)];
        ox += idx * st_[1][static_cast<size_t>(d)];
        oy += idx * st_[2][static_cast<size_t>(d)];
      }
      std::memcpy(o + i * static_cast<int64_t>(es), c[oc] ? x + ox * static_cast<int64_t>(es) : y + oy * static_cast<int64_t>(es), es);
    }
    return ok();
  }

 private:
  DType dtype_ = DType::kFloat32;
  Shape out_;
  std::array<Strides, 3> st_{};
};

// ---- Unary ops (float32; Neg/Abs/Not also on ints/bools)
enum class UnOp { kSigmoid, kRelu, kLeakyRelu, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kHardSigmoid, kHardSwish, kClip, kErf,
                  kReciprocal, kFloor, kCeil, kRound, kSoftplus, kElu, kIdentity, kNot, kSign, kSin, kCos };

class UnaryKernel : public Kernel {
 public:
  explicit UnaryKernel(UnOp op) : op_(op) {}
  Status init(const OpContext& ctx) {
    dtype_ = ctx.inputs[0].dtype;
    const auto& a = ctx.node.attrs;
    alpha_ = a.get_float("alpha", op_ == UnOp::kLeakyRelu ? 0.01f : (op_ == UnOp::kHardSigmoid ? 0.2f : 1.0f));
    beta_ = a.get_float("beta", 0.5f);
    if (op_ == UnOp::kClip) {
      SD_TRY(same_dtype(ctx, {1, 2}, 0, true));
      lo_ = -std::numeric_limits<float>::infinity();
      hi_ = std::numeric_limits<float>::infinity();
      if (ctx.opset < 11) {
        lo_ = a.get_float("min", lo_);
        hi_ = a.get_float("max", hi_);
      } else {
        clip_inputs_ = true;
      }
    }
    bool ok_type = dtype_ == DType::kFloat32 || op_ == UnOp::kIdentity || (op_ == UnOp::kNot && dtype_ == DType::kBool) ||
                   ((op_ == UnOp::kNeg || op_ == UnOp::kAbs || op_ == UnOp::kSign || op_ == UnOp::kClip) && (dtype_ == DType::kInt64 || dtype_ == DType::kInt32));
    if (!ok_type) return fail(ErrorCode::kUnsupported, ctx.describe() + ": element type " + dtype_name(dtype_) + " is not supported");
    return ok();
  }

  template <class T>
  void run_int(const T* x, T* y, int64_t n, std::span<const TensorRef> in) {
    switch (op_) {
      case UnOp::kNeg: for (int64_t i = 0; i < n; ++i) y[i] = wrapping_neg(x[i]); break;
      case UnOp::kAbs: for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? wrapping_neg(x[i]) : x[i]; break;
      case UnOp::kSign: for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>((x[i] > 0) - (x[i] < 0)); break;
      case UnOp::kClip: {
        T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        if (in.size() > 1 && in[1].data) lo = in[1].as<T>()[0];
        if (in.size() > 2 && in[2].data) hi = in[2].as<T>()[0];
        for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], lo), hi);
        break;
      }
      default: break;
    }
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const int64_t n = in[0].numel();
    if (op_ == UnOp::kIdentity) {
      if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, in[0].bytes());
      return ok();
    }
    if (op_ == UnOp::kNot) {
      for (int64_t i = 0; i < n; ++i) out[0].as<bool>()[i] = !in[0].as<bool>()[i];
      return ok();
    }
    if (dtype_ == DType::kInt64) { run_int(in[0].as<int64_t>(), out[0].as<int64_t>(), n, in); return ok(); }
    if (dtype_ == DType::kInt32) { run_int(in[0].as<int32_t>(), out[0].as<int32_t>(), n, in); return ok(); }
    float lo = lo_, hi = hi_;
    if (clip_inputs_) {
      if (in.size() > 1 && in[1].data) lo = in[1].as<float>()[0];
      if (in.size() > 2 && in[2].data) hi = in[2].as<float>()[0];
    }
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const float alpha = alpha_, beta = beta_;
    const UnOp op = op_;
    parallel_for(n, ctx.threads, 16384, [&](int64_t b, int64_t e) {
      switch (op) {
        case UnOp::kSigmoid: sigmoid(x + b, y + b, e - b); break;
        case UnOp::kRelu: for (int64_t i = b; i < e; ++i) y[i] = x[i] > 0 ? x[i] : 0.f; break;
        case UnOp::kLeakyRelu: for (int64_t i = b; i < e; ++i) y[i] = x[i] >= 0 ? x[i] : alpha * x[i]; break;
        case UnOp::kTanh: for (int64_t i = b; i < e; ++i) y[i] = std::tanh(x[i]); break;
        case UnOp::kExp: for (int64_t i = b; i < e; ++i) y[i] = std::exp(x[i]); break;
        case UnOp::kLog: for (int64_t i = b; i < e; ++i) y[i] = std::log(x[i]); break;
        case UnOp::kSqrt: for (int64_t i = b; i < e; ++i) y[i] = std::sqrt(x[i]); break;
        case UnOp::kNeg: for (int64_t i = b; i < e; ++i) y[i] = -x[i]; break;
        case UnOp::kAbs: for (int64_t i = b; i < e; ++i) y[i] = std::fabs(x[i]); break;
        case UnOp::kHardSigmoid: for (int64_t i = b; i < e; ++i) y[i] = std::max(0.f, std::min(1.f, alpha * x[i] + beta)); break;
        case UnOp::kHardSwish: for (int64_t i = b; i < e; ++i) y[i] = x[i] * std::max(0.f, std::min(1.f, x[i] / 6.f + 0.5f)); break;
        case UnOp::kClip: for (int64_t i = b; i < e; ++i) y[i] = std::min(std::max(x[i], lo), hi); break;
        case UnOp::kErf: for (int64_t i = b; i < e; ++i) y[i] = std::erf(x[i]); break;
        case UnOp::kReciprocal: for (int64_t i = b; i < e; ++i) y[i] = 1.f / x[i]; break;
        case UnOp::kFloor: for (int64_t i = b; i < e; ++i) y[i] = std::floor(x[i]); break;
        case UnOp::kCeil: for (int64_t i = b; i < e; ++i) y[i] = std::ceil(x[i]); break;
        case UnOp::kRound: for (int64_t i = b; i < e; ++i) y[i] = std::nearbyint(x[i]); break;
        case UnOp::kSoftplus: for (int64_t i = b; i < e; ++i) y[i] = std::log1p(std::exp(x[i])); break;
        case UnOp::kElu: for (int64_t i = b; i < e; ++i) y[i] = x[i] >= 0 ? x[i] : alpha * (std::exp(x[i]) - 1.f); break;
        case UnOp::kSign: for (int64_t i = b; i < e; ++i) y[i] = static_cast<float>((x[i] > 0) - (x[i] < 0)); break;
        case UnOp::kSin: for (int64_t i = b; i < e; ++i) y[i] = std::sin(x[i]); break;
        case UnOp::kCos: for (int64_t i = b; i < e; ++i) y[i] = std::cos(x[i]); break;
        default: break;
      }
    });
    return ok();
  }

 private:
  UnOp op_;
  DType dtype_ = DType::kFloat32;
  float alpha_ = 0, beta_ = 0, lo_ = 0, hi_ = 0;
  bool clip_inputs_ = false;
};

void add_unary(OpRegistry& r, const char* name, UnOp op) {
  OpSchema s;
  s.op_type = name;
  s.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    if (ctx.inputs.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": needs an input");
    return one_output(ctx.inputs[0].dtype, ctx.inputs[0].shape);
  };
  s.create = [op](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    auto k = std::make_unique<UnaryKernel>(op);
    SD_TRY(k->init(ctx));
    return std::unique_ptr<Kernel>(std::move(k));
  };
  r.add(std::move(s));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  add_binary(r, "Add", BinOp::kAdd);
  add_binary(r, "Sub", BinOp::kSub);
  add_binary(r, "Mul", BinOp::kMul);
  add_binary(r, "Div", BinOp::kDiv);
  add_binary(r, "Pow", BinOp::kPow);
  add_binary(r, "Mod", BinOp::kMod);
  add_binary(r, "Equal", BinOp::kEqual);
  add_binary(r, "Less", BinOp::kLess);
  add_binary(r, "Greater", BinOp::kGreater);
  add_binary(r, "LessOrEqual", BinOp::kLessEq);
  add_binary(r, "GreaterOrEqual", BinOp::kGreaterEq);
  add_binary(r, "And", BinOp::kAnd);
  add_binary(r, "Or", BinOp::kOr);
  add_binary(r, "Xor", BinOp::kXor);
  add_nary(r, "Max", BinOp::kMax, false);
  add_nary(r, "Min", BinOp::kMin, false);
  add_nary(r, "Sum", BinOp::kAdd, false);
  add_nary(r, "Mean", BinOp::kAdd, true);
  {
    OpSchema s;
    s.op_type = "Where";
    s.min_inputs = 3;
    s.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
      if (ctx.inputs.size() != 3) return fail(ErrorCode::kModel, ctx.describe() + ": needs 3 inputs");
      SD_TRY(input_dtype_is(ctx, 0, DType::kBool));
      SD_TRY(same_dtype(ctx, {2}, 1));
      SD_ASSIGN_OR_RETURN(Shape s1, broadcast_shapes(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx));
      SD_ASSIGN_OR_RETURN(Shape s2, broadcast_shapes(s1, ctx.inputs[2].shape, ctx));
      return one_output(ctx.inputs[1].dtype, s2);
    };
    s.create = make_factory<WhereKernel>();
    r.add(std::move(s));
  }
  const std::pair<const char*, UnOp> unary[] = {
      {"Sigmoid", UnOp::kSigmoid}, {"Relu", UnOp::kRelu}, {"LeakyRelu", UnOp::kLeakyRelu}, {"Tanh", UnOp::kTanh},
      {"Exp", UnOp::kExp}, {"Log", UnOp::kLog}, {"Sqrt", UnOp::kSqrt}, {"Neg", UnOp::kNeg}, {"Abs", UnOp::kAbs},
      {"HardSigmoid", UnOp::kHardSigmoid}, {"HardSwish", UnOp::kHardSwish}, {"Clip", UnOp::kClip}, {"Erf", UnOp::kErf},
      {"Reciprocal", UnOp::kReciprocal}, {"Floor", UnOp::kFloor}, {"Ceil", UnOp::kCeil}, {"Round", UnOp::kRound},
      {"Softplus", UnOp::kSoftplus}, {"Elu", UnOp::kElu}, {"Identity", UnOp::kIdentity}, {"Not", UnOp::kNot},
      {"Sign", UnOp::kSign}, {"Sin", UnOp::kSin}, {"Cos", UnOp::kCos}};
  for (const auto& [name, op] : unary) add_unary(r, name, op);
}

}  // namespace sd::native::ops

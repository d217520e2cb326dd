// BinExpectation (internal; made by passes::fuse_bin_expectation): YOLOv8's DFL box decoding in
// one pass. x holds, per batch n, box side s and anchor a, K logits over distance bins; the
// result is the expected distance under their softmax:
//   y[n, 0, s, a] = b + sum_k w[k] * exp(x_k - m) / sum_k exp(x_k - m),   m = max_k x_k.
// The exported graph does this as Transpose, Softmax over a 16-wide axis, Transpose and a 1x1
// Conv to one channel (four ops, two of them full copies); here the anchors, contiguous in x, are
// the vector: 16 anchors at a time, the K bins as 16-lane rows, no transposes. The row loop has
// baseline, AVX2 and AVX-512 variants (bin_expectation_kernel.h).
#include <vector>

#include "engine/native/cpu/bin_expectation_kernel.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

class BinExpectationKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const Shape& x = ctx.inputs[0].shape;
    bin_axis_ = static_cast<int>(ctx.node.attrs.get_int("bin_axis", 2));
    if (ctx.inputs[0].dtype != DType::kFloat32 || x.rank != 4 || (bin_axis_ != 1 && bin_axis_ != 2))
      return fail(ErrorCode::kModel, ctx.describe() + ": needs a float [N, S, K, A] or [N, K, S, A] input, got " + x.str());
    if (!ctx.constants[1]) return fail(ErrorCode::kModel, ctx.describe() + ": the bin values must be constant");
    w_ = ctx.constants[1]->to_float_vector();
    k_ = x[bin_axis_];
    if (static_cast<int64_t>(w_.size()) != k_ || k_ < 1)
      return fail(ErrorCode::kModel, ctx.describe() + ": " + std::to_string(w_.size()) + " bin values for " + std::to_string(k_) + " bins");
    if (has_input(ctx, 2)) {
      if (!ctx.constants[2] || ctx.constants[2]->numel() != 1) return fail(ErrorCode::kModel, ctx.describe() + ": the bias must be one constant");
      bias_ = ctx.constants[2]->to_float_vector()[0];
    }
    n_ = x[0], s_ = x[3 - bin_axis_], a_ = x[3];
    // Element strides of x along s and k (the anchors are contiguous).
    stride_s_ = bin_axis_ == 2 ? k_ * a_ : a_;
    stride_k_ = bin_axis_ == 2 ? a_ : s_ * a_;
    return ok();
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t rows = n_ * s_, a = a_, k = k_, sk = stride_k_;
    const bin_expectation::RowFn row = bin_expectation::row_kernel(cpu::active_isa());
    parallel_for(rows, ctx.threads, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / s_, s = r % s_;
        const float* xr = x + n * (s_ * k_ * a_) + s * stride_s_;
        float* yr = y + r * a;
        row(xr, yr, a, k, sk, w_.data(), bias_);
      }
    });
    return ok();
  }

 private:
  int bin_axis_ = 2;
  int64_t n_ = 0, s_ = 0, k_ = 0, a_ = 0, stride_s_ = 0, stride_k_ = 0;
  std::vector<float> w_;
  float bias_ = 0;
};

Result<std::vector<ValueType>> infer_bin_expectation(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  const int64_t bin_axis = ctx.node.attrs.get_int("bin_axis", 2);
  if (x.rank != 4 || (bin_axis != 1 && bin_axis != 2))
    return fail(ErrorCode::kModel, ctx.describe() + ": needs a rank-4 input with the bins on axis 1 or 2, got " + x.str());
  return one_output(DType::kFloat32, Shape{x[0], 1, x[3 - bin_axis], x[3]});
}

}  // namespace

void register_bin_expectation_op(OpRegistry& r) {
  OpSchema s;
  s.op_type = "BinExpectation";
  s.min_inputs = 2;
  s.infer = infer_bin_expectation;
  s.create = make_factory<BinExpectationKernel>();
  r.add(std::move(s));
}

}  // namespace sd::native::ops

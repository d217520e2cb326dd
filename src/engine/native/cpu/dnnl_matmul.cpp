// MatMul (numpy broadcasting of the batch dims) and Gemm on oneDNN's matmul primitive.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/native/cpu/dnnl_context.h"
#include "engine/native/cpu/weight_cache.h"
#include "engine/native/op_util.h"
#include "engine/native/precision.h"

namespace sd::native::dnnl_ops {
namespace {

using dnnl::memory;
using dt = memory::data_type;

memory::dims padded(const Shape& s, int rank) {
  memory::dims d(static_cast<size_t>(rank), 1);
  for (int i = 0; i < s.rank; ++i) d[static_cast<size_t>(rank - s.rank + i)] = s[i];
  return d;
}

memory::dims row_major_strides(const memory::dims& d) {
  memory::dims st(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) st[static_cast<size_t>(i)] = st[static_cast<size_t>(i + 1)] * d[static_cast<size_t>(i + 1)];
  return st;
}

// ---- MatMul
Result<Shape> matmul_shape(const OpContext& ctx) {
  Shape a = ctx.inputs[0].shape, b = ctx.inputs[1].shape;
  if (a.rank == 0 || b.rank == 0) return fail(ErrorCode::kModel, ctx.describe() + ": scalar operands");
  const bool a1 = a.rank == 1, b1 = b.rank == 1;
  if (a1) a = Shape{1, a[0]};
  if (b1) b = Shape{b[0], 1};
  if (a[a.rank - 1] != b[b.rank - 2])
    return fail(ErrorCode::kModel, ctx.describe() + ": shapes " + ctx.inputs[0].shape.str() + " and " + ctx.inputs[1].shape.str() + " do not multiply");
  Shape ba = a, bb = b;
  ba.rank -= 2, bb.rank -= 2;
  SD_ASSIGN_OR_RETURN(Shape batch, ops::broadcast_shapes(ba, bb, ctx));
  std::vector<int64_t> out(batch.dims.begin(), batch.dims.begin() + batch.rank);
  if (!a1) out.push_back(a[a.rank - 2]);
  if (!b1) out.push_back(b[b.rank - 1]);
  return Shape::from(out.begin(), out.end());
}

class MatMulKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.inputs[0].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 is supported");
    SD_TRY(ops::same_dtype(ctx, {1}));
    Shape a = ctx.inputs[0].shape, b = ctx.inputs[1].shape;
    if (a.rank == 1) a = Shape{1, a[0]};
    if (b.rank == 1) b = Shape{b[0], 1};
    const int rank = std::max(a.rank, b.rank);
    auto ad = padded(a, rank), bd = padded(b, rank);
    memory::dims cd = ad;
    for (int i = 0; i < rank - 2; ++i) cd[static_cast<size_t>(i)] = std::max(ad[static_cast<size_t>(i)], bd[static_cast<size_t>(i)]);
    cd[static_cast<size_t>(rank - 1)] = bd[static_cast<size_t>(rank - 1)];
    auto& eng = cpu_engine();
    memory::desc amd(ad, dt::f32, row_major_strides(ad)), bmd(bd, dt::f32, row_major_strides(bd)), cmd(cd, dt::f32, row_major_strides(cd));
    // --precision bf16 with a constant B (a layer's weights): B converted to bf16 once, A before
    // each run (into scratch), float32 accumulation and result. Otherwise float32.
    bf16_ = ctx.node.attrs.get_int(kBf16Compute, 0) != 0 && ctx.constants[1] != nullptr;
    const memory::desc a16(ad, dt::bf16, row_major_strides(ad)), b16(bd, dt::bf16, row_major_strides(bd));
    if (bf16_) {
      try {
        pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a16, b16, cmd), with_user_scratchpad(), eng);
      } catch (const dnnl::error&) {
        bf16_ = false;  // no bf16 kernel for this case: float32 as without the option
      }
    }
    try {
      if (!bf16_) pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(amd, bmd, cmd), with_user_scratchpad(), eng);
      mm_ = dnnl::matmul(pd_);
    } catch (const dnnl::error& e) {
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": oneDNN has no matmul for this case (" + e.what() + ")");
    }
    a_ = memory(amd, eng, nullptr), b_ = memory(bmd, eng, nullptr), c_ = memory(cmd, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}};
    size_t pads_at = 0;
    if (bf16_) {
      b16_ = shared_weights(*ctx.constants[1], bmd, b16);
      a16_ = memory(a16, eng, nullptr);
      a16_bytes_ = (a16.get_size() + 63) / 64 * 64;
      dnnl::reorder::primitive_desc to_pd(eng, amd, eng, a16, with_user_scratchpad());
      to_bf16_ = dnnl::reorder(to_pd);
      to_args_ = {{DNNL_ARG_FROM, a_}, {DNNL_ARG_TO, a16_}};
      args_[DNNL_ARG_SRC] = a16_;
      args_[DNNL_ARG_WEIGHTS] = *b16_;
      pads_at = a16_bytes_;
      to_scratchpad_.init(to_pd.scratchpad_desc(), pads_at, to_args_);
    }
    scratchpad_.init(pd_.scratchpad_desc(), pads_at, args_);
    stream_ = dnnl::stream(eng);
    return ok();
  }
  // [bf16 A (bf16 only) | the conversion's or the matmul's scratchpad]
  size_t scratch_bytes() const override { return std::max(scratchpad_.end(), to_scratchpad_.end()); }
  std::string implementation() const override { return std::string(pd_.impl_info_str()) + (bf16_ ? " (bf16)" : ""); }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    a_.set_data_handle(in[0].data), b_.set_data_handle(in[1].data), c_.set_data_handle(out[0].data);
    scratchpad_.bind(ctx.scratch);
    if (bf16_) {
      a16_.set_data_handle(ctx.scratch);
      to_scratchpad_.bind(ctx.scratch);
      to_bf16_.execute(stream_, to_args_);
    }
    mm_.execute(stream_, args_);
    return ok();
  }

 private:
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul mm_;
  Scratchpad scratchpad_, to_scratchpad_;
  memory a_, b_, c_;
  std::unordered_map<int, memory> args_;
  dnnl::stream stream_;
  bool bf16_ = false;
  std::shared_ptr<const dnnl::memory> b16_;  // B in bf16, shared like convolution weights
  memory a16_;                               // A in bf16, in scratch
  size_t a16_bytes_ = 0;
  dnnl::reorder to_bf16_;
  std::unordered_map<int, memory> to_args_;
};

// ---- Gemm: Y = alpha * op(A) op(B) + beta * C (C broadcast to [M, N]).
class GemmKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.inputs[0].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 is supported");
    SD_TRY(ops::same_dtype(ctx, {1, 2}));
    const auto& at = ctx.node.attrs;
    const bool ta = at.get_int("transA", 0) != 0, tb = at.get_int("transB", 0) != 0;
    alpha_ = at.get_float("alpha", 1.f), beta_ = at.get_float("beta", 1.f);
    const Shape& a = ctx.inputs[0].shape;
    const Shape& b = ctx.inputs[1].shape;
    m_ = ta ? a[1] : a[0], k_ = ta ? a[0] : a[1], n_ = tb ? b[0] : b[1];
    auto& eng = cpu_engine();
    memory::desc amd({m_, k_}, dt::f32, ta ? memory::dims{1, m_} : memory::dims{k_, 1});
    memory::desc bmd({k_, n_}, dt::f32, tb ? memory::dims{1, k_} : memory::dims{n_, 1});
    memory::desc cmd({m_, n_}, dt::f32, memory::dims{n_, 1});
    dnnl::primitive_attr attr;
    if (alpha_ != 1.f) attr.set_output_scales(0, {alpha_});
    try {
      pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(amd, bmd, cmd), with_user_scratchpad(attr), eng);
      mm_ = dnnl::matmul(pd_);
    } catch (const dnnl::error& e) {
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": oneDNN has no matmul for this case (" + e.what() + ")");
    }
    a_ = memory(amd, eng, nullptr), b_ = memory(bmd, eng, nullptr), c_ = memory(cmd, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}};
    scratchpad_.init(pd_.scratchpad_desc(), 0, args_);
    stream_ = dnnl::stream(eng);
    if (ops::has_input(ctx, 2)) {
      has_c_ = true;
      c_strides_ = ops::broadcast_strides(ctx.inputs[2].shape, Shape{m_, n_});
    }
    return ok();
  }
  size_t scratch_bytes() const override { return scratchpad_.end(); }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    a_.set_data_handle(in[0].data), b_.set_data_handle(in[1].data), c_.set_data_handle(out[0].data);
    scratchpad_.bind(ctx.scratch);
    mm_.execute(stream_, args_);
    if (has_c_ && beta_ != 0.f) {
      float* y = out[0].as<float>();
      const float* c = in[2].as<float>();
      for (int64_t i = 0; i < m_; ++i)
        for (int64_t j = 0; j < n_; ++j) y[i * n_ + j] += beta_ * c[i * c_strides_[0] + j * c_strides_[1]];
    }
    return ok();
  }

 private:
  float alpha_ = 1, beta_ = 1;
  int64_t m_ = 0, k_ = 0, n_ = 0;
  bool has_c_ = false;
  std::array<int64_t, Shape::kMaxRank> c_strides_{};
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul mm_;
  Scratchpad scratchpad_;
  memory a_, b_, c_;
  std::unordered_map<int, memory> args_;
  dnnl::stream stream_;
};

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  OpSchema mm;
  mm.op_type = "MatMul";
  mm.min_inputs = 2;
  mm.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    SD_ASSIGN_OR_RETURN(Shape s, matmul_shape(ctx));
    return ops::one_output(DType::kFloat32, s);
  };
  mm.create = ops::make_factory<MatMulKernel>();
  r.add(std::move(mm));
  OpSchema gemm;
  gemm.op_type = "Gemm";
  gemm.min_inputs = 2;
  gemm.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    const Shape& a = ctx.inputs[0].shape;
    const Shape& b = ctx.inputs[1].shape;
    if (a.rank != 2 || b.rank != 2) return fail(ErrorCode::kModel, ctx.describe() + ": A and B must be 2-D");
    const bool ta = ctx.node.attrs.get_int("transA", 0) != 0, tb = ctx.node.attrs.get_int("transB", 0) != 0;
    if ((ta ? a[0] : a[1]) != (tb ? b[1] : b[0])) return fail(ErrorCode::kModel, ctx.describe() + ": A and B do not multiply");
    Shape out{ta ? a[1] : a[0], tb ? b[0] : b[1]};
    if (ops::has_input(ctx, 2)) SD_TRY(ops::broadcast_shapes(ctx.inputs[2].shape, out, ctx));
    return ops::one_output(DType::kFloat32, out);
  };
  gemm.create = ops::make_factory<GemmKernel>();
  r.add(std::move(gemm));
}

}  // namespace sd::native::dnnl_ops

// Slice, Transpose, Concat, Split, pooling, nearest Resize, Softmax and BinExpectation on the GPU
// (kernels: data_kernels.cu), float32 or fp16 storage (--precision fp16: the kernels' __half
// instantiation, float arithmetic). The planner hands these ops their physical layout (axes,
// permutations and scales remapped for channels-last tensors), as it does the CPU's.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cuda_ops.h"
#include "engine/native/cuda/data_kernels.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/op_util.h"

namespace sd::native::cuda {
namespace {

std::array<int64_t, Shape::kMaxRank> strides_of(const Shape& s) { return ops::contiguous_strides(s); }

// The node's element type for its kernels: float16 when the planner stores its tensors in fp16.
bool half_io(const OpContext& ctx) { return float_io(ctx, 1) == DType::kFloat16; }

// One or more strided copies per run.
class CopyKernel final : public Kernel {
 public:
  struct Part {
    StridedCopy copy;
    size_t input = 0, output = 0;
  };
  CopyKernel(std::vector<Part> parts, const char* name, bool half) : parts_(std::move(parts)), name_(name), half_(half) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    for (const Part& p : parts_)
      if (in[p.input].data && out[p.output].data) {  // never a write through a missing buffer
        const int e = half_ ? launch_strided_copy(p.copy, in[p.input].as<__half>(), out[p.output].as<__half>(), stream_of(ctx))
                            : launch_strided_copy(p.copy, in[p.input].as<float>(), out[p.output].as<float>(), stream_of(ctx));
        SD_CUDA_TRY(static_cast<cudaError_t>(e));
      }
    return ok();
  }
  std::string implementation() const override { return half_ ? kernel_name<__half>(name_) : kernel_name<float>(name_); }

 private:
  std::vector<Part> parts_;
  const char* name_;
  bool half_;
};

Result<std::unique_ptr<Kernel>> create_slice(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(const ops::SliceParams sp, ops::slice_params(ctx));
  const Shape& in = ctx.inputs[0].shape;
  const auto st = strides_of(in), dst = strides_of(sp.out);
  CopyKernel::Part part;
  part.copy.rank = sp.out.rank;
  for (int d = 0; d < sp.out.rank; ++d) {
    part.copy.dims[d] = sp.out[d];
    part.copy.src_strides[d] = st[static_cast<size_t>(d)] * sp.step[static_cast<size_t>(d)];
    part.copy.dst_strides[d] = dst[static_cast<size_t>(d)];
    part.copy.src_offset += sp.start[static_cast<size_t>(d)] * st[static_cast<size_t>(d)];
  }
  return std::unique_ptr<Kernel>(new CopyKernel({part}, "streamdet:cuda_strided_copy", half_io(ctx)));
}

Result<std::unique_ptr<Kernel>> create_transpose(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  auto perm = ctx.node.attrs.get_ints("perm");
  if (perm.empty())
    for (int i = in.rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": perm does not match the input");
  const Shape& out = ctx.outputs[0].shape;
  const auto st = strides_of(in), dst = strides_of(out);
  CopyKernel::Part part;
  part.copy.rank = out.rank;
  for (int d = 0; d < out.rank; ++d) {
    const int64_t p = perm[static_cast<size_t>(d)];
    if (p < 0 || p >= in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": bad perm");
    part.copy.dims[d] = out[d];
    part.copy.src_strides[d] = st[static_cast<size_t>(p)];
    part.copy.dst_strides[d] = dst[static_cast<size_t>(d)];
  }
  return std::unique_ptr<Kernel>(new CopyKernel({part}, "streamdet:cuda_strided_copy", half_io(ctx)));
}

// Concat (each input into its slab of the output) and Split (each slab of the input out).
Result<std::unique_ptr<Kernel>> create_concat_or_split(const OpContext& ctx, bool concat) {
  const Shape& whole = concat ? ctx.outputs[0].shape : ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(const int axis, ops::normalize_axis(ctx.node.attrs.get_int("axis", 0), whole.rank, ctx));
  const auto whole_st = strides_of(whole);
  std::vector<CopyKernel::Part> parts;
  int64_t offset = 0;
  const size_t pieces = concat ? ctx.inputs.size() : ctx.outputs.size();
  for (size_t j = 0; j < pieces; ++j) {
    const Shape& piece = concat ? ctx.inputs[j].shape : ctx.outputs[j].shape;
    // A piece nobody reads (an unnamed Split output: no buffer at run time) is not copied, but it
    // still takes its slab of the whole: the next piece starts after it.
    const bool unread = !concat && j < ctx.node.outputs.size() && ctx.node.outputs[j] < 0;
    if (unread || (concat ? ctx.inputs[j].dtype : ctx.outputs[j].dtype) == DType::kUndefined) {
      if (piece.rank != whole.rank) return fail(ErrorCode::kUnsupported, ctx.describe() + ": a piece of unknown extent");
      offset += piece[axis];
      continue;
    }
    const auto piece_st = strides_of(piece);
    CopyKernel::Part part;
    part.input = concat ? j : 0;
    part.output = concat ? 0 : j;
    part.copy.rank = piece.rank;
    for (int d = 0; d < piece.rank; ++d) {
      part.copy.dims[d] = piece[d];
      (concat ? part.copy.src_strides : part.copy.dst_strides)[d] = piece_st[static_cast<size_t>(d)];
      (concat ? part.copy.dst_strides : part.copy.src_strides)[d] = whole_st[static_cast<size_t>(d)];
    }
    (concat ? part.copy.dst_offset : part.copy.src_offset) = offset * whole_st[static_cast<size_t>(axis)];
    offset += piece[axis];
    parts.push_back(part);
  }
  // Concat: every input's type is the output's (float_io over all inputs).
  return std::unique_ptr<Kernel>(new CopyKernel(std::move(parts), "streamdet:cuda_strided_copy",
                                                float_io(ctx, concat ? ctx.inputs.size() : 1) == DType::kFloat16));
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const PoolParams& p, bool half) : p_(p), half_(half) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const int e = half_ ? launch_pool(p_, in[0].as<__half>(), out[0].as<__half>(), stream_of(ctx))
                        : launch_pool(p_, in[0].as<float>(), out[0].as<float>(), stream_of(ctx));
    SD_CUDA_TRY(static_cast<cudaError_t>(e));
    return ok();
  }
  std::string implementation() const override { return half_ ? kernel_name<__half>("streamdet:cuda_pool") : "streamdet:cuda_pool"; }

 private:
  PoolParams p_;
  bool half_;
};

Result<std::unique_ptr<Kernel>> create_pool(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(const ops::PoolGeometry g, ops::pool_geometry(ctx));
  PoolParams p;
  p.n = g.n, p.c = g.c, p.h = g.h, p.w = g.w, p.kh = g.kh, p.kw = g.kw, p.sh = g.sh, p.sw = g.sw, p.pt = g.pt, p.pl = g.pl;
  p.oh = g.oh, p.ow = g.ow, p.max = g.max, p.include_pad = g.include_pad;
  p.src_nhwc = ctx.node.attrs.get_int(kSrcNhwc, 0) != 0;
  p.dst_nhwc = ctx.node.attrs.get_int(kDstNhwc, 0) != 0;
  return std::unique_ptr<Kernel>(new PoolKernel(p, half_io(ctx)));
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const ResizeParams& p, bool half) : p_(p), half_(half) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const int e = half_ ? launch_resize_nearest(p_, in[0].as<__half>(), out[0].as<__half>(), stream_of(ctx))
                        : launch_resize_nearest(p_, in[0].as<float>(), out[0].as<float>(), stream_of(ctx));
    SD_CUDA_TRY(static_cast<cudaError_t>(e));
    return ok();
  }
  std::string implementation() const override {
    return half_ ? kernel_name<__half>("streamdet:cuda_resize_nearest") : "streamdet:cuda_resize_nearest";
  }

 private:
  ResizeParams p_;
  bool half_;
};

// The scales a Resize/Upsample node gives (as cpu/misc_ops.cpp's resize_plan reads them); empty
// when it gives sizes instead. nullopt: not known when the model is planned.
std::optional<std::vector<float>> resize_scales(const OpContext& ctx) {
  const bool upsample = ctx.node.op_type == "Upsample";
  if (upsample && ctx.opset < 9) return ctx.node.attrs.get_floats("scales");
  const size_t at = (upsample || ctx.opset < 11) ? 1 : 2;
  if (!ops::has_input(ctx, at) || ctx.inputs[at].shape.numel() == 0) return std::vector<float>{};
  if (!ctx.constants[at]) return std::nullopt;
  return ctx.constants[at]->to_float_vector();
}

// Nearest, asymmetric coordinates, floor rounding, every dim an integer multiple of the input's
// and every scale given an integer: YOLO's upsampling. The kernel's index rule (o * in / out) is
// the CPU's (floor(o / scale)) only then: a scale of 2.1 makes 4 -> 8 as 2 does, but the CPU
// reads index floor(2 / 2.1) = 0 where the kernel reads 1. Other modes stay on the CPU.
Result<std::unique_ptr<Kernel>> create_resize(const OpContext& ctx) {
  const auto& a = ctx.node.attrs;
  const bool upsample = ctx.node.op_type == "Upsample";
  if (a.get_string("mode", "nearest") != "nearest") return fail(ErrorCode::kUnsupported, "linear");
  if (!upsample && (a.get_string("coordinate_transformation_mode", "half_pixel") != "asymmetric" ||
                    a.get_string("nearest_mode", "round_prefer_floor") != "floor"))
    return fail(ErrorCode::kUnsupported, "coordinates");
  const Shape& in = ctx.inputs[0].shape;
  const Shape& out = ctx.outputs[0].shape;
  if (in.rank != out.rank || in.rank > kMaxCopyRank) return fail(ErrorCode::kUnsupported, "rank");
  const auto scales = resize_scales(ctx);
  if (!scales) return fail(ErrorCode::kUnsupported, "scales not constant");
  for (const float sc : *scales)
    if (!(sc >= 1.f) || sc != std::floor(sc)) return fail(ErrorCode::kUnsupported, "a scale that is not an integer");
  ResizeParams p;
  p.rank = in.rank;
  for (int d = 0; d < in.rank; ++d) {
    if (in[d] < 1 || out[d] % in[d] != 0) return fail(ErrorCode::kUnsupported, "not an integer upsampling");
    p.in_dims[d] = in[d], p.out_dims[d] = out[d];
  }
  return std::unique_ptr<Kernel>(new ResizeKernel(p, half_io(ctx)));
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(int64_t outer, int64_t axis, int64_t inner, bool half) : outer_(outer), axis_(axis), inner_(inner), half_(half) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const int e = half_ ? launch_softmax(in[0].as<__half>(), out[0].as<__half>(), outer_, axis_, inner_, stream_of(ctx))
                        : launch_softmax(in[0].as<float>(), out[0].as<float>(), outer_, axis_, inner_, stream_of(ctx));
    SD_CUDA_TRY(static_cast<cudaError_t>(e));
    return ok();
  }
  std::string implementation() const override { return half_ ? kernel_name<__half>("streamdet:cuda_softmax") : "streamdet:cuda_softmax"; }

 private:
  int64_t outer_, axis_, inner_;
  bool half_;
};

// Opset 13 on: over one axis (default the last). Before: over everything from `axis` (default 1)
// on, the input seen as 2-D.
Result<std::unique_ptr<Kernel>> create_softmax(const OpContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  const bool one_axis = ctx.opset >= 13;
  SD_ASSIGN_OR_RETURN(const int axis, ops::normalize_axis(ctx.node.attrs.get_int("axis", one_axis ? -1 : 1), std::max(s.rank, 1), ctx));
  int64_t outer = 1, len = 1, inner = 1;
  for (int d = 0; d < s.rank; ++d) (d < axis ? outer : (d == axis || !one_axis) ? len : inner) *= s[d];
  return std::unique_ptr<Kernel>(new SoftmaxKernel(outer, len, inner, half_io(ctx)));
}

class BinExpectationKernel final : public Kernel {
 public:
  BinExpectationKernel(const BinExpectationParams& p, bool half) : p_(p), half_(half) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const int e = half_ ? launch_bin_expectation(p_, in[0].as<__half>(), in[1].as<__half>(), out[0].as<__half>(), stream_of(ctx))
                        : launch_bin_expectation(p_, in[0].as<float>(), in[1].as<float>(), out[0].as<float>(), stream_of(ctx));
    SD_CUDA_TRY(static_cast<cudaError_t>(e));
    return ok();
  }
  std::string implementation() const override {
    return half_ ? kernel_name<__half>("streamdet:cuda_bin_expectation") : "streamdet:cuda_bin_expectation";
  }

 private:
  BinExpectationParams p_;
  bool half_;
};

// As cpu/bin_expectation.cpp: x [N, S, K, A] (bin_axis 2) or [N, K, S, A] (bin_axis 1).
Result<std::unique_ptr<Kernel>> create_bin_expectation(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  const int bin_axis = static_cast<int>(ctx.node.attrs.get_int("bin_axis", 2));
  if (x.rank != 4 || (bin_axis != 1 && bin_axis != 2)) return fail(ErrorCode::kModel, ctx.describe() + ": bad input " + x.str());
  // The bin values: float constants (on the device in the node's element type), one per bin.
  if (!ctx.constants[1] || ctx.constants[1]->numel() != x[bin_axis] || ctx.inputs[1].dtype != ctx.inputs[0].dtype)
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": the bin values must be float constants, one per bin");
  BinExpectationParams p;
  p.n = x[0], p.k = x[bin_axis], p.s = x[3 - bin_axis], p.a = x[3];
  p.stride_n = p.s * p.k * p.a;
  p.stride_s = bin_axis == 2 ? p.k * p.a : p.a;
  p.stride_k = bin_axis == 2 ? p.a : p.s * p.a;
  if (ops::has_input(ctx, 2)) {
    if (!ctx.constants[2] || ctx.constants[2]->numel() != 1) return fail(ErrorCode::kUnsupported, ctx.describe() + ": bias not constant");
    p.bias = ctx.constants[2]->to_float_vector()[0];
  }
  return std::unique_ptr<Kernel>(new BinExpectationKernel(p, half_io(ctx)));
}

void add(CudaOpTable& ops, const char* name, size_t data_inputs, std::function<Result<std::unique_ptr<Kernel>>(const OpContext&)> create) {
  ops[name] = CudaOp{[create, data_inputs](const OpContext& ctx) {
                       size_t n = data_inputs == 0 ? ctx.inputs.size() : data_inputs;
                       return float_io_ok(ctx, n) && static_cast<bool>(create(ctx));
                     },
                     create};
}

}  // namespace

void register_data_ops(CudaOpTable& ops) {
  add(ops, "Slice", 1, create_slice);
  add(ops, "Transpose", 1, create_transpose);
  add(ops, "Concat", 0, [](const OpContext& ctx) { return create_concat_or_split(ctx, true); });
  add(ops, "Split", 1, [](const OpContext& ctx) { return create_concat_or_split(ctx, false); });
  for (const char* pool : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}) add(ops, pool, 1, create_pool);
  add(ops, "Resize", 1, create_resize);
  add(ops, "Upsample", 1, create_resize);
  add(ops, "Softmax", 1, create_softmax);
  add(ops, "BinExpectation", 1, create_bin_expectation);
}

}  // namespace sd::native::cuda

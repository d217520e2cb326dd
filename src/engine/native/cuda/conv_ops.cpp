// Conv and FusedConv on the GPU, float32 or fp16 storage (--precision fp16: the tensors, weights
// and bias in fp16, float32 accumulation): through cuDNN where it is loaded and a node's plan
// passes its probe, on the faster of its two engines (cudnn_engine_choice.h: the legacy API's,
// cudnn_conv.cpp, or the graph API's, cudnn_graph_conv.cpp), else on the direct kernel (conv.cu),
// and the step's implementation says which and why ("cudnn-graph:eng31/fp16 (0.081 ms; ...)",
// "direct (cudnn: asymmetric padding ...; cudnn-graph: ...)").
#include <cuda_runtime_api.h>

#include "engine/native/backend.h"
#include "engine/native/cuda/conv.h"
#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cuda_ops.h"
#include "engine/native/cuda/cudnn_engine_choice.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/conv_attrs.h"

namespace sd::native::cuda {
namespace {

// conv.cu's post_op() numbers the post ops as ops::PostKind does.
static_assert(static_cast<int>(ops::PostKind::kRelu) == 0 && static_cast<int>(ops::PostKind::kLeakyRelu) == 1 &&
              static_cast<int>(ops::PostKind::kSilu) == 2 && static_cast<int>(ops::PostKind::kSigmoid) == 3 &&
              static_cast<int>(ops::PostKind::kHardSwish) == 4 && static_cast<int>(ops::PostKind::kClip) == 5 &&
              static_cast<int>(ops::PostKind::kSum) == 6);

template <class T>
class DirectConvKernel final : public Kernel {
 public:
  DirectConvKernel(const ConvParams& p, bool bias, bool sum, std::string why_not_cudnn)
      : p_(p), bias_(bias), sum_(sum), why_not_cudnn_(std::move(why_not_cudnn)) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const T* bias = bias_ ? in[2].as<T>() : nullptr;
    const T* sum = sum_ ? in[3].as<T>() : nullptr;
    SD_CUDA_TRY(static_cast<cudaError_t>(launch_conv_direct(p_, in[0].as<T>(), in[1].as<T>(), bias, sum, out[0].as<T>(),
                                                            ctx.stream ? ctx.stream->native_handle() : nullptr)));
    return ok();
  }
  // why_not_cudnn_ names each engine's problem ("cudnn: ...; cudnn-graph: ...").
  std::string implementation() const override { return kernel_name<T>("direct") + " (" + why_not_cudnn_ + ")"; }

 private:
  ConvParams p_;
  bool bias_, sum_;
  std::string why_not_cudnn_;
};

bool has(const OpContext& ctx, size_t i) { return i < ctx.inputs.size() && ctx.inputs[i].dtype != DType::kUndefined; }

// The direct kernel's parameters and whether a residual sum is among the post ops.
Result<std::pair<ConvParams, bool>> conv_params(const OpContext& ctx) {
  // Every tensor of one float type: float32, or float16 with fp16 storage.
  const DType t = ctx.inputs.empty() ? DType::kUndefined : ctx.inputs[0].dtype;
  if (t != DType::kFloat32 && t != DType::kFloat16) return fail(ErrorCode::kUnsupported, ctx.describe() + ": float32 or float16 only");
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (has(ctx, i) && ctx.inputs[i].dtype != t) return fail(ErrorCode::kUnsupported, ctx.describe() + ": mixed element types");
  for (const auto& o : ctx.outputs)
    if (o.dtype != DType::kUndefined && o.dtype != t) return fail(ErrorCode::kUnsupported, ctx.describe() + ": mixed element types");
  SD_ASSIGN_OR_RETURN(const ops::ConvGeometry g, ops::conv_geometry(ctx));
  SD_ASSIGN_OR_RETURN(const auto post, ops::post_ops(ctx));
  if (post.size() > static_cast<size_t>(kMaxPostOps)) return fail(ErrorCode::kUnsupported, ctx.describe() + ": too many post ops");
  ConvParams p;
  p.n = g.n, p.c = g.c, p.h = g.h, p.w = g.w, p.oc = g.oc, p.kh = g.kh, p.kw = g.kw, p.oh = g.oh, p.ow = g.ow, p.group = g.group;
  p.sh = g.sh, p.sw = g.sw, p.dh = g.dh, p.dw = g.dw, p.pt = g.pt, p.pl = g.pl;
  p.src_nhwc = ctx.node.attrs.get_int(kSrcNhwc, 0) != 0;
  p.dst_nhwc = ctx.node.attrs.get_int(kDstNhwc, 0) != 0;
  bool sum = false;
  p.post_count = static_cast<int>(post.size());
  for (size_t k = 0; k < post.size(); ++k) {
    p.post_kind[k] = static_cast<int>(post[k].kind);
    p.post_alpha[k] = post[k].alpha, p.post_beta[k] = post[k].beta;
    sum = sum || post[k].kind == ops::PostKind::kSum;
  }
  return std::pair{p, sum};
}

Result<std::unique_ptr<Kernel>> create_conv(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(const auto params, conv_params(ctx));
  const auto& [p, sum] = params;
  auto fast = create_fastest_cudnn_conv(ctx, p, has(ctx, 2), sum);
  if (fast) return std::move(*fast);
  // The plan (model-info --steps, the engine profile, the GPU check) shows why per node.
  if (ctx.inputs[0].dtype == DType::kFloat16)
    return std::unique_ptr<Kernel>(new DirectConvKernel<__half>(p, has(ctx, 2), sum, fast.error().message));
  return std::unique_ptr<Kernel>(new DirectConvKernel<float>(p, has(ctx, 2), sum, fast.error().message));
}

}  // namespace

void register_conv_ops(CudaOpTable& ops) {
  // Weights and bias as inputs of any kind: the planner hands the kernel their device copies.
  // (Asking the planner's question does not build the kernel: no cuDNN plan and probe here.)
  auto supports = [](const OpContext& ctx) { return static_cast<bool>(conv_params(ctx)); };
  ops["Conv"] = CudaOp{supports, create_conv};
  ops["FusedConv"] = CudaOp{supports, create_conv};
}

}  // namespace sd::native::cuda

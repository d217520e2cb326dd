// Conv and FusedConv on the GPU: the direct kernel (conv.cu) for now, fp32.
#include <cuda_runtime_api.h>

#include "engine/native/backend.h"
#include "engine/native/cuda/conv.h"
#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cuda_ops.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/conv_attrs.h"

namespace sd::native::cuda {
namespace {

// conv.cu's post_op() numbers the post ops as ops::PostKind does.
static_assert(static_cast<int>(ops::PostKind::kRelu) == 0 && static_cast<int>(ops::PostKind::kLeakyRelu) == 1 &&
              static_cast<int>(ops::PostKind::kSilu) == 2 && static_cast<int>(ops::PostKind::kSigmoid) == 3 &&
              static_cast<int>(ops::PostKind::kHardSwish) == 4 && static_cast<int>(ops::PostKind::kClip) == 5 &&
              static_cast<int>(ops::PostKind::kSum) == 6);

class DirectConvKernel final : public Kernel {
 public:
  explicit DirectConvKernel(const ConvParams& p, bool bias, bool sum) : p_(p), bias_(bias), sum_(sum) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const float* bias = bias_ ? in[2].as<float>() : nullptr;
    const float* sum = sum_ ? in[3].as<float>() : nullptr;
    SD_CUDA_TRY(static_cast<cudaError_t>(launch_conv_direct(p_, in[0].as<float>(), in[1].as<float>(), bias, sum, out[0].as<float>(),
                                                            ctx.stream ? ctx.stream->native_handle() : nullptr)));
    return ok();
  }
  std::string implementation() const override { return "streamdet:cuda_direct_conv"; }

 private:
  ConvParams p_;
  bool bias_, sum_;
};

bool has(const OpContext& ctx, size_t i) { return i < ctx.inputs.size() && ctx.inputs[i].dtype != DType::kUndefined; }

Result<std::unique_ptr<Kernel>> create_conv(const OpContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (has(ctx, i) && ctx.inputs[i].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": float32 only");
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
  return std::unique_ptr<Kernel>(new DirectConvKernel(p, has(ctx, 2), sum));
}

}  // namespace

void register_conv_ops(CudaOpTable& ops) {
  // Weights and bias as inputs of any kind: the planner hands the kernel their device copies.
  auto supports = [](const OpContext& ctx) { return static_cast<bool>(create_conv(ctx)); };
  ops["Conv"] = CudaOp{supports, create_conv};
  ops["FusedConv"] = CudaOp{supports, create_conv};
}

}  // namespace sd::native::cuda

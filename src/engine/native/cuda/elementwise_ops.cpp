// Unary activations and broadcasting binary arithmetic on the GPU (kernels: elementwise.cu).
#include <cuda_runtime_api.h>

#include <cmath>

#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cuda_ops.h"
#include "engine/native/cuda/elementwise.h"
#include "engine/native/op_util.h"

namespace sd::native::cuda {
namespace {

// T: float, or __half with fp16 storage.
template <class T>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(UnaryOp op, float alpha, float beta) : op_(op), alpha_(alpha), beta_(beta) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    SD_CUDA_TRY(static_cast<cudaError_t>(launch_unary(op_, in[0].as<T>(), out[0].as<T>(), out[0].numel(), alpha_, beta_, stream_of(ctx))));
    return ok();
  }
  std::string implementation() const override { return kernel_name<T>("streamdet:cuda_unary"); }

 private:
  UnaryOp op_;
  float alpha_, beta_;
};

// Clip's bounds: attributes before opset 11, optional constant inputs from it on.
bool clip_bounds(const OpContext& ctx, float& lo, float& hi) {
  lo = -INFINITY, hi = INFINITY;
  if (ctx.opset < 11) {
    lo = ctx.node.attrs.get_float("min", lo), hi = ctx.node.attrs.get_float("max", hi);
    return true;
  }
  for (size_t k = 1; k < 3 && k < ctx.inputs.size(); ++k) {
    if (ctx.inputs[k].dtype == DType::kUndefined) continue;  // omitted
    if (!ctx.constants[k] || ctx.constants[k]->dtype() != DType::kFloat32 || ctx.constants[k]->numel() != 1) return false;
    (k == 1 ? lo : hi) = *ctx.constants[k]->as<float>();
  }
  return true;
}

void add_unary(CudaOpTable& ops, const char* name, UnaryOp op) {
  ops[name] = CudaOp{
      [op](const OpContext& ctx) {
        float lo, hi;
        return float_io_ok(ctx, 1) && ctx.outputs.size() == 1 && (op != UnaryOp::kClip || clip_bounds(ctx, lo, hi));
      },
      [op](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
        float alpha = 0, beta = 0;
        if (op == UnaryOp::kLeakyRelu) alpha = ctx.node.attrs.get_float("alpha", 0.01f);
        if (op == UnaryOp::kHardSigmoid) alpha = ctx.node.attrs.get_float("alpha", 0.2f), beta = ctx.node.attrs.get_float("beta", 0.5f);
        if (op == UnaryOp::kClip && !clip_bounds(ctx, alpha, beta))
          return fail(ErrorCode::kUnsupported, ctx.describe() + ": bounds not known when planning");
        if (float_io(ctx, 1) == DType::kFloat16) return std::unique_ptr<Kernel>(new UnaryKernel<__half>(op, alpha, beta));
        return std::unique_ptr<Kernel>(new UnaryKernel<float>(op, alpha, beta));
      }};
}

template <class T>
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(BinaryOp op, const Broadcast& bc) : op_(op), bc_(bc) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    SD_CUDA_TRY(static_cast<cudaError_t>(
        launch_binary(op_, in[0].as<T>(), in[1].as<T>(), out[0].as<T>(), out[0].numel(), bc_, stream_of(ctx))));
    return ok();
  }
  std::string implementation() const override { return kernel_name<T>("streamdet:cuda_binary"); }

 private:
  BinaryOp op_;
  Broadcast bc_;
};

void add_binary(CudaOpTable& ops, const char* name, BinaryOp op) {
  ops[name] = CudaOp{
      [](const OpContext& ctx) {
        // Max and Min are n-ary in ONNX: two operands here.
        return ctx.inputs.size() == 2 && ctx.outputs.size() == 1 && float_io_ok(ctx, 2) &&
               ctx.outputs[0].shape.rank <= kMaxBroadcastRank && ctx.inputs[0].shape.rank <= ctx.outputs[0].shape.rank &&
               ctx.inputs[1].shape.rank <= ctx.outputs[0].shape.rank;
      },
      [op](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
        Broadcast bc;
        const Shape& out = ctx.outputs[0].shape;
        bc.rank = out.rank;
        for (int d = 0; d < out.rank; ++d) bc.dims[d] = out[d];
        const auto a = ops::broadcast_strides(ctx.inputs[0].shape, out), b = ops::broadcast_strides(ctx.inputs[1].shape, out);
        for (int d = 0; d < out.rank; ++d) bc.a_strides[d] = a[static_cast<size_t>(d)], bc.b_strides[d] = b[static_cast<size_t>(d)];
        if (bc.rank == 0) {  // scalars: one element
          bc.rank = 1;
          bc.dims[0] = 1;
        }
        if (float_io(ctx, 2) == DType::kFloat16) return std::unique_ptr<Kernel>(new BinaryKernel<__half>(op, bc));
        return std::unique_ptr<Kernel>(new BinaryKernel<float>(op, bc));
      }};
}

}  // namespace

void register_elementwise_ops(CudaOpTable& ops) {
  add_unary(ops, "Relu", UnaryOp::kRelu);
  add_unary(ops, "LeakyRelu", UnaryOp::kLeakyRelu);
  add_unary(ops, "Sigmoid", UnaryOp::kSigmoid);
  add_unary(ops, "Tanh", UnaryOp::kTanh);
  add_unary(ops, "HardSigmoid", UnaryOp::kHardSigmoid);
  add_unary(ops, "HardSwish", UnaryOp::kHardSwish);
  add_unary(ops, "Neg", UnaryOp::kNeg);
  add_unary(ops, "Abs", UnaryOp::kAbs);
  add_unary(ops, "Exp", UnaryOp::kExp);
  add_unary(ops, "Clip", UnaryOp::kClip);
  add_unary(ops, "Identity", UnaryOp::kIdentity);
  add_binary(ops, "Add", BinaryOp::kAdd);
  add_binary(ops, "Sub", BinaryOp::kSub);
  add_binary(ops, "Mul", BinaryOp::kMul);
  add_binary(ops, "Div", BinaryOp::kDiv);
  add_binary(ops, "Max", BinaryOp::kMax);
  add_binary(ops, "Min", BinaryOp::kMin);
}

}  // namespace sd::native::cuda

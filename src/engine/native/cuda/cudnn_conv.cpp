#include "engine/native/cuda/cudnn_conv.h"

#include <cuda_runtime_api.h>

#include <vector>

#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cudnn_conv_desc.h"
#include "engine/native/cuda/cudnn_library.h"
#include "engine/native/cuda/cudnn_support.h"
#include "engine/native/half.h"

namespace sd::native::cuda {
namespace {

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "unknown";
  }
}

// The node's descriptors, made once, destroyed with the kernel.
struct Descriptors {
  const CudnnLibrary* lib = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (!lib) return;
    if (x) lib->api().DestroyTensorDescriptor(x);
    if (y) lib->api().DestroyTensorDescriptor(y);
    if (w) lib->api().DestroyFilterDescriptor(w);
    if (conv) lib->api().DestroyConvolutionDescriptor(conv);
  }
};

// half: fp16 tensors and filter (--precision fp16) with float32 accumulation on tensor cores;
// else float32 throughout with FMA math.
Status make_descriptors(const CudnnLibrary& lib, const CudnnConvShape& s, bool filter_nhwc, bool half, Descriptors& d) {
  const cudnnDataType_t data = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  d.lib = &lib;
  SD_CUDNN_TRY(lib, CreateTensorDescriptor, &d.x);
  SD_CUDNN_TRY(lib, CreateTensorDescriptor, &d.y);
  SD_CUDNN_TRY(lib, CreateFilterDescriptor, &d.w);
  SD_CUDNN_TRY(lib, CreateConvolutionDescriptor, &d.conv);
  SD_CUDNN_TRY(lib, SetTensor4dDescriptorEx, d.x, data, s.x_dims[0], s.x_dims[1], s.x_dims[2], s.x_dims[3],
               s.x_strides[0], s.x_strides[1], s.x_strides[2], s.x_strides[3]);
  SD_CUDNN_TRY(lib, SetTensor4dDescriptorEx, d.y, data, s.y_dims[0], s.y_dims[1], s.y_dims[2], s.y_dims[3],
               s.y_strides[0], s.y_strides[1], s.y_strides[2], s.y_strides[3]);
  SD_CUDNN_TRY(lib, SetFilter4dDescriptor, d.w, data, filter_nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, s.w_dims[0], s.w_dims[1], s.w_dims[2], s.w_dims[3]);
  // Cross-correlation is what ONNX's Conv computes; the compute type is float32 either way (fp16
  // data accumulates in float32: CUDNN_DATA_FLOAT, cuDNN's "pseudo-half" configuration).
  SD_CUDNN_TRY(lib, SetConvolution2dDescriptor, d.conv, s.pad_h, s.pad_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w,
               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  SD_CUDNN_TRY(lib, SetConvolutionGroupCount, d.conv, s.groups);
  // fp32 stays fp32: no TF32 tensor cores, so the results match the CPU's within rounding. fp16:
  // tensor cores (CUDNN_TENSOR_OP_MATH; never a down-conversion of float32 data).
  SD_CUDNN_TRY(lib, SetConvolutionMathType, d.conv, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH);
  int n = 0, c = 0, h = 0, w = 0;
  SD_CUDNN_TRY(lib, GetConvolution2dForwardOutputDim, d.conv, d.x, d.w, &n, &c, &h, &w);
  if (std::array<int, 4>{n, c, h, w} != s.y_dims)
    return fail(ErrorCode::kUnsupported, "cuDNN's output " + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) +
                                             "x" + std::to_string(w) + " is not the node's");
  return ok();
}

class CudnnConvKernel final : public Kernel {
 public:
  // half: the node's tensors are fp16 (--precision fp16).
  CudnnConvKernel(const CudnnLibrary& lib, SharedHandle& handle, const ConvParams& p, bool bias, bool sum, bool half)
      : lib_(lib), handle_(handle), p_(p), bias_(bias), sum_(sum), half_(half) {}

  // weights_ohwi: the node's constant weights in cuDNN's NHWC filter layout (an own device copy,
  // made here), or empty for ONNX's layout as the input hands them.
  Status prepare(const CudnnConvShape& shape, std::span<const float> weights_ohwi) {
    if (!weights_ohwi.empty()) SD_TRY(upload(w_ohwi_, weights_ohwi, half_));
    w_dims_ = shape.w_dims;
    shape1_ = shape;
    shape1_.x_dims[0] = shape1_.y_dims[0] = 1;
    SD_TRY(make_descriptors(lib_, shape, !weights_ohwi.empty(), half_, d_));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    std::lock_guard lock(handle_.mutex);
    SD_CUDNN_TRY(lib_, GetConvolutionForwardAlgorithm_v7, handle_.handle, d_.x, d_.w, d_.conv, d_.y,
                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf);
    // The heuristics' order, fastest expected first; the first that runs here within the workspace cap.
    // (cudnnFindConvolutionForwardAlgorithmEx, measuring each, was tried on the H100 in run 3
    // (docs/gpu.md): the same algorithm for every fp16 YOLOv8n layer, and for fp32 implicit_gemm
    // everywhere with batch 1 slower, 3.27 against 2.44 ms: the heuristics stay.)
    std::string seen;
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      size_t bytes = 0;
      if (!lib_.check(lib_.api().GetConvolutionForwardWorkspaceSize(handle_.handle, d_.x, d_.w, d_.conv, d_.y, perf[i].algo, &bytes),
                      "cudnnGetConvolutionForwardWorkspaceSize"))
        continue;
      if (bytes > kCudnnMaxWorkspace) {
        seen += std::string(seen.empty() ? "" : ", ") + algo_name(perf[i].algo) + " needs " + std::to_string(bytes >> 20) + " MiB";
        continue;
      }
      algo_ = perf[i].algo, workspace_ = bytes;
      return ok();
    }
    return fail(ErrorCode::kUnsupported, "no forward algorithm for this geometry" + (seen.empty() ? "" : " (" + seen + ")"));
  }

  // At batch 1 (the node's descriptors with n = 1, same algorithm): the first GPU run's plans at
  // batch 32 and 64 took 20 and 40 s, nearly all of it this probe's host-side random data and
  // comparison over the whole batch. Where cuDNN cannot run the algorithm at batch 1, the whole batch.
  Status probe() {
    Descriptors d1;
    ConvParams p1 = p_;
    p1.n = 1;
    size_t ws1 = 0;
    auto workspace_at_1 = [&] {
      std::lock_guard lock(handle_.mutex);
      return lib_.api().GetConvolutionForwardWorkspaceSize(handle_.handle, d1.x, d1.w, d1.conv, d1.y, algo_, &ws1) == CUDNN_STATUS_SUCCESS;
    };
    const bool single = p_.n > 1 && make_descriptors(lib_, shape1_, w_ohwi_.p != nullptr, half_, d1) && workspace_at_1() &&
                        ws1 <= kCudnnMaxWorkspace;
    const Descriptors& d = single ? d1 : d_;
    const ConvParams& p = single ? p1 : p_;
    const size_t workspace = single ? ws1 : workspace_;
    SD_ASSIGN_OR_RETURN(const std::string why,
                        probe_against_direct(p, half_, bias_, sum_, w_dims_, w_ohwi_.p != nullptr, workspace, [&](const ProbeBuffers& b) {
                          return enqueue(d, p, workspace, b.x, b.w, b.bias, b.sum, b.y, b.workspace, nullptr);
                        }));
    if (!why.empty()) return fail(ErrorCode::kInternal, std::string("probe output of ") + algo_name(algo_) + " " + why);
    return ok();
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    if (workspace_ && !ctx.scratch) return fail(ErrorCode::kInternal, "cuDNN convolution without its workspace (no session scratch)");
    void* stream = ctx.stream ? ctx.stream->native_handle() : nullptr;
    const void* w = w_ohwi_.p ? w_ohwi_.p : in[1].data;
    // The probe ran on fresh allocations (256-byte aligned); a tensor the planner hands over may
    // be a view at any element offset (a Split's part), and cuDNN's vectorized kernels (fp16
    // tensor cores above all) want 16-byte aligned data. Such a run takes the direct kernel.
    if (!aligned16(in[0].data) || !aligned16(w) || !aligned16(out[0].data)) return run_direct(p_, half_, bias_, sum_, in, out, stream);
    return enqueue(d_, p_, workspace_, in[0].data, w, bias_ ? in[2].data : nullptr, sum_ ? in[3].data : nullptr, out[0].data, ctx.scratch, stream);
  }
  size_t scratch_bytes() const override { return workspace_; }
  std::string implementation() const override {
    return std::string("cudnn:") + algo_name(algo_) + (w_ohwi_.p ? "/nhwc_filter" : "") + (half_ ? "/fp16" : "");
  }

 private:
  // Pointers in the node's storage type (float, or __half with half_).
  // d and p: the node's descriptors and parameters (d_, p_), or the probe's at batch 1.
  Status enqueue(const Descriptors& d, const ConvParams& p, size_t workspace_bytes, const void* x, const void* w, const void* bias,
                 const void* sum, void* y, void* workspace, void* stream) {
    const float one = 1.f, zero = 0.f;
    {
      std::lock_guard lock(handle_.mutex);
      SD_CUDNN_TRY(lib_, SetStream, handle_.handle, static_cast<cudaStream_t>(stream));
      SD_CUDNN_TRY(lib_, ConvolutionForward, handle_.handle, &one, d.x, x, d.w, w, d.conv, algo_, workspace, workspace_bytes, &zero,
                   d.y, y);
    }
    const int e = half_ ? launch_conv_epilogue(p, static_cast<const __half*>(bias), static_cast<const __half*>(sum), static_cast<__half*>(y), stream)
                        : launch_conv_epilogue(p, static_cast<const float*>(bias), static_cast<const float*>(sum), static_cast<float*>(y), stream);
    SD_CUDA_TRY(static_cast<cudaError_t>(e));
    return ok();
  }

  const CudnnLibrary& lib_;
  SharedHandle& handle_;
  ConvParams p_;
  bool bias_, sum_, half_;
  DeviceMemory w_ohwi_;
  std::array<int, 4> w_dims_{};
  Descriptors d_;
  CudnnConvShape shape1_{};  // the node's shape at batch 1 (the probe's)
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_ = 0;
};

}  // namespace

Result<std::unique_ptr<Kernel>> create_cudnn_conv(const OpContext& ctx, const ConvParams& p, bool bias, bool sum) {
  const CudnnLibrary* lib = CudnnLibrary::shared();
  if (!lib) return fail(ErrorCode::kUnsupported, "not loaded");
  SD_ASSIGN_OR_RETURN(const ops::ConvGeometry g, ops::conv_geometry(ctx));
  SD_ASSIGN_OR_RETURN(const CudnnConvShape shape, cudnn_conv_shape(g, p.src_nhwc, p.dst_nhwc));
  SD_ASSIGN_OR_RETURN(SharedHandle * handle, shared_handle(*lib));
  auto plan = [&](std::span<const float> weights_ohwi) -> Result<std::unique_ptr<Kernel>> {
    auto kernel = std::make_unique<CudnnConvKernel>(*lib, *handle, p, bias, sum, ctx.inputs[0].dtype == DType::kFloat16);
    SD_TRY(kernel->prepare(shape, weights_ohwi));
    SD_TRY(kernel->probe());
    return std::unique_ptr<Kernel>(std::move(kernel));
  };
  // An NHWC input with constant weights: first the filter in the input's layout (cuDNN's NHWC
  // filter format), then ONNX's layout as it comes. The constant is the host's float32 tensor
  // (with fp16 storage too: the kernel's own copy is converted when uploaded).
  const HostTensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
  std::string nhwc_filter_problem;
  if (p.src_nhwc && w && w->dtype() == DType::kFloat32) {
    const std::vector<float> ohwi = oihw_to_ohwi(std::span<const float>(w->as<float>(), size_t(w->numel())), shape.w_dims);
    auto k = plan(ohwi);
    if (k) return k;
    nhwc_filter_problem = k.error().message;
  }
  auto k = plan({});
  if (k || nhwc_filter_problem.empty()) return k;
  return fail(k.error().code, "NHWC filter: " + nhwc_filter_problem + "; NCHW filter: " + k.error().message);
}

}  // namespace sd::native::cuda

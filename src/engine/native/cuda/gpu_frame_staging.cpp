#include "engine/native/cuda/gpu_frame_staging.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "engine/native/cuda/device_buffer.h"
#include "engine/native/cuda/gpu_preprocess.h"

namespace sd::native {
namespace {

using cuda::DeviceBuffer;

class CudaFrameInput final : public GpuFrameInput {
 public:
  CudaFrameInput(NativeSession& session, int index, std::string device, const uint64_t* keep)
      : session_(session), index_(index), device_(std::move(device)), keep_(keep) {}
  ~CudaFrameInput() override {
    // The kernels write memory the session owns and read frame_.
    if (work_ && work_ != stream_) cudaStreamSynchronize(work_);
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }

  Status put_bgr(int slot, int batch, const uint8_t* bgr, int width, int height, int64_t pitch,
                 const GpuInputPlacement& placement) override {
    SD_ASSIGN_OR_RETURN(void* dst, slot_address(slot, batch, placement));
    const size_t row = static_cast<size_t>(width) * 3;
    SD_TRY(frame_.reserve(row * static_cast<size_t>(height)));
    // Ordered on the stream: the previous slot's kernel has read frame_ before this copy lands.
    SD_CUDA_TRY(cudaMemcpy2DAsync(frame_.get(), row, bgr, static_cast<size_t>(pitch), row, static_cast<size_t>(height),
                                  cudaMemcpyHostToDevice, work_));
    const cuda::BgrImage img{frame_.get<uint8_t>(), width, height, static_cast<int64_t>(row)};
    return cuda::letterbox_bgr_gpu(img, placement, layout_, dst, work_);
  }

  Status put_i420(int slot, int batch, const uint8_t* i420, int width, int height, const GpuInputPlacement& placement) override {
    if (width % 2 || height % 2) return fail(ErrorCode::kInternal, "put_i420: odd frame size " + std::to_string(width) + "x" + std::to_string(height));
    SD_ASSIGN_OR_RETURN(void* dst, slot_address(slot, batch, placement));
    const size_t y_bytes = static_cast<size_t>(width) * static_cast<size_t>(height);
    const size_t c_bytes = y_bytes / 4;
    // NV12's chroma: U and V interleaved (a quarter of the frame each; cheap beside a letterbox).
    // The previous slot's upload from nv12_ must be done before it is overwritten.
    SD_CUDA_TRY(cudaStreamSynchronize(work_));
    nv12_.resize(y_bytes / 2);
    const uint8_t* u = i420 + y_bytes;
    const uint8_t* v = u + c_bytes;
    for (size_t i = 0; i < c_bytes; ++i) nv12_[2 * i] = u[i], nv12_[2 * i + 1] = v[i];
    SD_TRY(frame_.reserve(y_bytes + nv12_.size()));
    uint8_t* d = frame_.get<uint8_t>();
    SD_CUDA_TRY(cudaMemcpyAsync(d, i420, y_bytes, cudaMemcpyHostToDevice, work_));
    SD_CUDA_TRY(cudaMemcpyAsync(d + y_bytes, nv12_.data(), nv12_.size(), cudaMemcpyHostToDevice, work_));
    const cuda::Nv12Image img{d, d + y_bytes, width, height, width, width};
    return cuda::letterbox_nv12_gpu(img, placement, layout_, dst, work_);
  }

  Status put_nv12_device(int slot, int batch, const DeviceNv12& f, const GpuInputPlacement& placement) override {
    if (f.device != index_)
      return fail(ErrorCode::kInternal, "put_nv12_device: a frame in the memory of cuda:" + std::to_string(f.device) + " given to " + device_);
    SD_ASSIGN_OR_RETURN(void* dst, slot_address(slot, batch, placement));
    // Read where the decoder left it, on this batch's stream: its copy-out was complete before it was handed out.
    const cuda::Nv12Image img{f.luma, f.chroma, f.width, f.height, f.pitch, f.pitch};
    return cuda::letterbox_nv12_gpu(img, placement, layout_, dst, work_);
  }

  Status infer_put(std::vector<Tensor>& outputs) override {
    if (!target_ || put_count_ != batch_)
      return fail(ErrorCode::kInternal, "infer_put: " + std::to_string(put_count_) + " of " + std::to_string(batch_) + " images put");
    // Written on the session's own stream (bound): the run is queued after the kernels. Else the
    // letterbox has to be in the staging before the session's stream uploads it.
    if (!on_session_stream_) SD_CUDA_TRY(cudaStreamSynchronize(work_));
    put_count_ = 0;
    TensorRef in{DType::kFloat32, shape_, bound_ ? nullptr : staged_};
    NativeSession::RunOptions options;
    options.inputs_on_device = bound_ ? 1 : 0;
    options.outputs_on_device = keep_ ? *keep_ : 0;
    SD_TRY(session_.run(std::span<const TensorRef>(&in, 1), results_, options));
    outputs.resize(results_.size());
    for (size_t i = 0; i < results_.size(); ++i) {
      if (i < 64 && (options.outputs_on_device >> i & 1)) continue;  // read on the device: stale here
      const HostTensor& r = results_[i];
      if (r.dtype() != DType::kFloat32) return fail(ErrorCode::kModel, "model output " + std::to_string(i) + " is not float32");
      outputs[i].resize(r.shape());
      std::memcpy(outputs[i].data(), r.data(), r.bytes());
    }
    return ok();
  }

  std::string where() const override {
    if (!target_ || bound_)
      return device_ + " (letterbox kernel into the device input as the plan reads it" + (bound_ && layout_ == cuda::InputLayout::kNchwF16 ? ", fp16)" : ")");
    return device_ + " (letterbox kernel into the input's page-locked staging: " + why_staging_ + ")";
  }

 private:
  // Where the kernels write the input of `batch` images: the plan's device input where the
  // session can bind it (device_input: fp32 or fp16 NCHW, on the session's stream), its
  // page-locked staging otherwise (fp32 NCHW, on our stream; said once). Asked again at every
  // batch's first slot: the binding holds until a run with other shapes, which infer() may make.
  Status choose_target(const Shape& shape) {
    // Nothing of an earlier batch may still be writing where the next one goes.
    if (work_) SD_CUDA_TRY(cudaStreamSynchronize(work_));
    auto at = session_.device_input(0, {shape});
    const bool usable = at && at->data && at->shape == shape && (at->dtype == DType::kFloat32 || at->dtype == DType::kFloat16);
    if (usable) {
      bound_ = true;
      target_ = at->data;
      layout_ = at->dtype == DType::kFloat16 ? cuda::InputLayout::kNchwF16 : cuda::InputLayout::kNchwF32;
      elem_bytes_ = at->dtype == DType::kFloat16 ? 2 : 4;
      on_session_stream_ = at->stream != nullptr;
      if (!on_session_stream_) SD_TRY(own_stream());
      work_ = on_session_stream_ ? static_cast<cudaStream_t>(at->stream) : stream_;
      return ok();
    }
    why_staging_ = !at ? at.error().message : at->data ? "the plan's input is " + std::string(dtype_name(at->dtype)) + " " + at->shape.str() : at->why_not;
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      std::fprintf(stderr, "streamdet: warning: %s: the GPU letterbox writes the input's page-locked staging, which the run uploads again: %s\n",
                   device_.c_str(), why_staging_.c_str());
    bound_ = false;
    layout_ = cuda::InputLayout::kNchwF32;
    elem_bytes_ = 4;
    on_session_stream_ = false;
    SD_TRY(own_stream());
    work_ = stream_;
    SD_ASSIGN_OR_RETURN(void* host, session_.input_staging(0, static_cast<size_t>(shape.numel()) * sizeof(float)));
    if (!host) return fail(ErrorCode::kUnsupported, device_ + ": the session has no page-locked input staging for the GPU letterbox");
    // cudaHostAlloc'd memory is mapped under unified addressing (every 64-bit Linux GPU since
    // Fermi): the device pointer is the host's. Where the runtime will not say so, take the host
    // pointer when the device reports unified addressing, and fail otherwise.
    void* dev = nullptr;
    if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      int unified = 0;
      SD_CUDA_TRY(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, index_));
      if (!unified)
        return fail(ErrorCode::kUnsupported, device_ + ": the input staging is not addressable from the GPU (no unified addressing)");
      dev = host;
    }
    staged_ = host;
    target_ = dev;
    return ok();
  }

  Status own_stream() {
    if (!stream_) SD_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return ok();
  }

  // The device address of image `slot` of an input of `batch` images.
  Result<void*> slot_address(int slot, int batch, const GpuInputPlacement& p) {
    if (batch < 1 || slot < 0 || slot >= batch) return fail(ErrorCode::kInternal, "gpu frame input: slot " + std::to_string(slot) + " of a batch of " + std::to_string(batch));
    SD_CUDA_TRY(cudaSetDevice(index_));
    const Shape shape{batch, 3, p.dst_height, p.dst_width};
    if (slot == 0 || !target_ || !(shape == shape_)) {
      target_ = nullptr;
      shape_ = shape;
      batch_ = batch;
      put_count_ = 0;
      SD_TRY(choose_target(shape));
    }
    ++put_count_;
    return static_cast<unsigned char*>(target_) + static_cast<int64_t>(slot) * 3 * p.dst_height * p.dst_width * elem_bytes_;
  }

  NativeSession& session_;
  int index_ = 0;
  const uint64_t* keep_ = nullptr;  // outputs left on the device (the context's)
  std::string device_;
  cudaStream_t stream_ = nullptr;   // ours, for the staging (created when needed)
  cudaStream_t work_ = nullptr;     // where this batch's uploads and kernels go: the session's or ours
  bool on_session_stream_ = false;
  DeviceBuffer frame_;               // this slot's pixels on the device
  std::vector<uint8_t> nv12_;        // an I420 frame's chroma interleaved
  Shape shape_;
  int batch_ = 0, put_count_ = 0;
  bool bound_ = false;               // the kernels write the plan's device input (device_input)
  void* target_ = nullptr;           // where image 0 goes, as the kernels address it
  cuda::InputLayout layout_ = cuda::InputLayout::kNchwF32;
  int64_t elem_bytes_ = 4;
  void* staged_ = nullptr;           // staging: its host address (the session's run reads it)
  std::string why_staging_;
  std::vector<HostTensor> results_;
};

}  // namespace

std::unique_ptr<GpuFrameInput> make_cuda_frame_input(NativeSession& session, int cuda_index, const std::string& device_name,
                                                     const uint64_t* keep) {
  return std::make_unique<CudaFrameInput>(session, cuda_index, device_name, keep);
}

}  // namespace sd::native

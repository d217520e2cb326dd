#include "engine/native/cuda/gpu_frame_staging.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "engine/native/cuda/device_buffer.h"
#include "engine/native/cuda/gpu_preprocess.h"

namespace sd::native {
namespace {

using cuda::DeviceBuffer;

class CudaFrameInput final : public GpuFrameInput {
 public:
  CudaFrameInput(NativeSession& session, int index, std::string device) : session_(session), index_(index), device_(std::move(device)) {}
  ~CudaFrameInput() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);  // the kernels write the staging the session owns
      cudaStreamDestroy(stream_);
    }
  }

  Status put_bgr(int slot, int batch, const uint8_t* bgr, int width, int height, int64_t pitch,
                 const GpuInputPlacement& placement) override {
    SD_ASSIGN_OR_RETURN(float* dst, slot_address(slot, batch, placement));
    const size_t row = static_cast<size_t>(width) * 3;
    SD_TRY(frame_.reserve(row * static_cast<size_t>(height)));
    // Ordered on the stream: the previous slot's kernel has read frame_ before this copy lands.
    SD_CUDA_TRY(cudaMemcpy2DAsync(frame_.get(), row, bgr, static_cast<size_t>(pitch), row, static_cast<size_t>(height),
                                  cudaMemcpyHostToDevice, stream_));
    const cuda::BgrImage img{frame_.get<uint8_t>(), width, height, static_cast<int64_t>(row)};
    return cuda::letterbox_bgr_gpu(img, placement, cuda::InputLayout::kNchwF32, dst, stream_);
  }

  Status put_i420(int slot, int batch, const uint8_t* i420, int width, int height, const GpuInputPlacement& placement) override {
    if (width % 2 || height % 2) return fail(ErrorCode::kInternal, "put_i420: odd frame size " + std::to_string(width) + "x" + std::to_string(height));
    SD_ASSIGN_OR_RETURN(float* dst, slot_address(slot, batch, placement));
    const size_t y_bytes = static_cast<size_t>(width) * static_cast<size_t>(height);
    const size_t c_bytes = y_bytes / 4;
    // NV12's chroma: U and V interleaved (a quarter of the frame each; cheap beside a letterbox).
    // The previous slot's upload from nv12_ must be done before it is overwritten.
    SD_CUDA_TRY(cudaStreamSynchronize(stream_));
    nv12_.resize(y_bytes / 2);
    const uint8_t* u = i420 + y_bytes;
    const uint8_t* v = u + c_bytes;
    for (size_t i = 0; i < c_bytes; ++i) nv12_[2 * i] = u[i], nv12_[2 * i + 1] = v[i];
    SD_TRY(frame_.reserve(y_bytes + nv12_.size()));
    uint8_t* d = frame_.get<uint8_t>();
    SD_CUDA_TRY(cudaMemcpyAsync(d, i420, y_bytes, cudaMemcpyHostToDevice, stream_));
    SD_CUDA_TRY(cudaMemcpyAsync(d + y_bytes, nv12_.data(), nv12_.size(), cudaMemcpyHostToDevice, stream_));
    const cuda::Nv12Image img{d, d + y_bytes, width, height, width, width};
    return cuda::letterbox_nv12_gpu(img, placement, cuda::InputLayout::kNchwF32, dst, stream_);
  }

  Status put_nv12_device(int slot, int batch, const DeviceNv12& f, const GpuInputPlacement& placement) override {
    if (f.device != index_)
      return fail(ErrorCode::kInternal, "put_nv12_device: a frame in the memory of cuda:" + std::to_string(f.device) + " given to " + device_);
    SD_ASSIGN_OR_RETURN(float* dst, slot_address(slot, batch, placement));
    // Read where the decoder left it, on this stream: its copy-out was complete before it was handed out.
    const cuda::Nv12Image img{f.luma, f.chroma, f.width, f.height, f.pitch, f.pitch};
    return cuda::letterbox_nv12_gpu(img, placement, cuda::InputLayout::kNchwF32, dst, stream_);
  }

  Status infer_put(std::vector<Tensor>& outputs) override {
    if (!staged_ || put_count_ != batch_)
      return fail(ErrorCode::kInternal, "infer_put: " + std::to_string(put_count_) + " of " + std::to_string(batch_) + " images put");
    // The session runs on its own stream: the letterbox has to be in the staging first.
    SD_CUDA_TRY(cudaStreamSynchronize(stream_));
    put_count_ = 0;
    TensorRef in{DType::kFloat32, shape_, staged_};
    SD_TRY(session_.run(std::span<const TensorRef>(&in, 1), results_));
    outputs.resize(results_.size());
    for (size_t i = 0; i < results_.size(); ++i) {
      const HostTensor& r = results_[i];
      if (r.dtype() != DType::kFloat32) return fail(ErrorCode::kModel, "model output " + std::to_string(i) + " is not float32");
      outputs[i].resize(r.shape());
      std::memcpy(outputs[i].data(), r.data(), r.bytes());
    }
    return ok();
  }

  std::string where() const override { return device_ + " (letterbox kernel into the input's page-locked staging)"; }

 private:
  // The device address of image `slot` in the staging for an input of `batch` images.
  Result<float*> slot_address(int slot, int batch, const GpuInputPlacement& p) {
    if (batch < 1 || slot < 0 || slot >= batch) return fail(ErrorCode::kInternal, "gpu frame input: slot " + std::to_string(slot) + " of a batch of " + std::to_string(batch));
    SD_CUDA_TRY(cudaSetDevice(index_));
    if (!stream_) SD_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const Shape shape{batch, 3, p.dst_height, p.dst_width};
    if (slot == 0 || !staged_ || !(shape == shape_)) {
      // The staging may move when it grows: nothing of an earlier batch may still be writing it.
      SD_CUDA_TRY(cudaStreamSynchronize(stream_));
      shape_ = shape;
      batch_ = batch;
      put_count_ = 0;
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
      staged_ = static_cast<float*>(host);
      staged_device_ = static_cast<float*>(dev);
    }
    ++put_count_;
    return staged_device_ + static_cast<int64_t>(slot) * 3 * p.dst_height * p.dst_width;
  }

  NativeSession& session_;
  int index_ = 0;
  std::string device_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer frame_;               // this slot's pixels on the device
  std::vector<uint8_t> nv12_;        // an I420 frame's chroma interleaved
  Shape shape_;
  int batch_ = 0, put_count_ = 0;
  float* staged_ = nullptr;          // host address of the staging (the session's run reads it)
  float* staged_device_ = nullptr;   // the same memory as the kernels address it
  std::vector<HostTensor> results_;
};

}  // namespace

std::unique_ptr<GpuFrameInput> make_cuda_frame_input(NativeSession& session, int cuda_index, const std::string& device_name) {
  return std::make_unique<CudaFrameInput>(session, cuda_index, device_name);
}

}  // namespace sd::native

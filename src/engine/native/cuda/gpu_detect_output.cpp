#include "engine/native/cuda/gpu_detect_output.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "engine/gpu_head_on_device.h"
#include "engine/native/cuda/elementwise.h"
#include "engine/native/cuda/gpu_postprocess.h"

namespace sd::native {
namespace {

class CudaDetectOutput final : public GpuDetectOutput, public GpuHeadOnDevice {
 public:
  CudaDetectOutput(NativeSession& session, int index, std::string device, uint64_t* keep)
      : session_(session), index_(index), device_(std::move(device)), keep_(keep) {}
  ~CudaDetectOutput() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }

  Status detect(const GpuDetectHead& head, const GpuDetectParams& params, int image, Detections& out) override {
    out.clear();
    SD_ASSIGN_OR_RETURN(auto dev, session_.device_output(static_cast<size_t>(head.output)));
    if (!dev.data) return fail(ErrorCode::kUnsupported, "model output " + std::to_string(head.output) + " is computed on the CPU, not on " + device_);
    if (dev.dtype != DType::kFloat32 && dev.dtype != DType::kFloat16)
      return fail(ErrorCode::kUnsupported, "model output " + std::to_string(head.output) + " is " + dtype_name(dev.dtype) + " on " + device_);
    const Shape& s = dev.shape;
    const int per_anchor = head.num_classes + (head.kind == GpuDetectHead::Kind::kYoloV8 ? 4 : 5);
    const bool channel_major = head.kind == GpuDetectHead::Kind::kYoloV8 && !head.transposed;
    if (s.rank != 3 || image < 0 || image >= s[0] || head.num_classes < 1 || s[channel_major ? 1 : 2] != per_anchor)
      return fail(ErrorCode::kUnsupported, "model output " + std::to_string(head.output) + " of shape " + s.str() + " is not the head the decoder was made for (image " + std::to_string(image) + ")");
    const int64_t anchors = channel_major ? s[2] : s[1];
    const int64_t count = anchors * per_anchor;  // one image's values
    SD_CUDA_TRY(cudaSetDevice(index_));
    if (!stream_) SD_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const float* data = nullptr;
    if (dev.dtype == DType::kFloat32) {
      data = static_cast<const float*>(dev.data) + image * count;
    } else {
      SD_TRY(widened_.reserve(static_cast<size_t>(count) * sizeof(float)));
      const auto* h = static_cast<const __half*>(dev.data) + image * count;
      const int e = cuda::launch_half_to_float(h, widened_.get<float>(), count, stream_);
      SD_TRY(cuda::cuda_status(static_cast<cudaError_t>(e), "launch_half_to_float", __FILE__, __LINE__));
      data = widened_.get<float>();
    }
    const cuda::GpuNmsParams nms{params.iou_threshold, params.agnostic, params.max_det};
    if (head.kind == GpuDetectHead::Kind::kYoloV8) {
      const cuda::YoloV8HeadView view{data, anchors, head.num_classes, head.transposed};
      return cuda::decode_nms_yolov8_gpu(view, params.conf_threshold, nms, scratch_, stream_, out);
    }
    cuda::ObjectnessHeadView view{data, anchors, head.num_classes};
    if (head.kind == GpuDetectHead::Kind::kYoloX) {
      view.num_strides = head.num_strides;
      for (int i = 0; i < head.num_strides && i < 4; ++i) view.strides[i] = head.strides[i];
      view.input_width = head.input_width;
      view.input_height = head.input_height;
    }
    return cuda::decode_nms_objectness_gpu(view, params.conf_threshold, nms, scratch_, stream_, out);
  }

  std::string where() const override { return device_ + " (decode + NMS kernels on the output, kept boxes copied back)"; }

  bool keep_on_device(int output, bool on) override {
    if (!keep_ || output < 0 || output >= 64) return false;
    const uint64_t bit = uint64_t{1} << output;
    *keep_ = on ? (*keep_ | bit) : (*keep_ & ~bit);
    return true;
  }

  Status host_output(int output, Tensor& out) override {
    if (output < 0) return fail(ErrorCode::kUsage, "host_output: no output " + std::to_string(output));
    SD_TRY(session_.output_to_host(static_cast<size_t>(output), host_));
    if (host_.dtype() != DType::kFloat32) return fail(ErrorCode::kModel, "model output " + std::to_string(output) + " is not float32");
    out.resize(host_.shape());
    std::memcpy(out.data(), host_.data(), host_.bytes());
    return ok();
  }

 private:
  NativeSession& session_;
  int index_ = 0;
  std::string device_;
  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer widened_;  // an fp16 head's image as float32
  cuda::GpuPostprocessScratch scratch_;
  uint64_t* keep_ = nullptr;  // the context's outputs kept on the device
  HostTensor host_;           // host_output's late copy
};

}  // namespace

std::unique_ptr<GpuDetectOutput> make_cuda_detect_output(NativeSession& session, int cuda_index, const std::string& device_name,
                                                         uint64_t* keep) {
  return std::make_unique<CudaDetectOutput>(session, cuda_index, device_name, keep);
}

}  // namespace sd::native

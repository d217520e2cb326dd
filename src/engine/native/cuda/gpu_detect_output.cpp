#include "engine/native/cuda/gpu_detect_output.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "engine/native/cuda/elementwise.h"
#include "engine/native/cuda/gpu_postprocess.h"

namespace sd::native {
namespace {

class CudaDetectOutput final : public GpuDetectOutput {
 public:
  CudaDetectOutput(NativeSession& session, int index, std::string device) : session_(session), index_(index), device_(std::move(device)) {}
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

 private:
  NativeSession& session_;
  int index_ = 0;
  std::string device_;
  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer widened_;  // an fp16 head's image as float32
  cuda::GpuPostprocessScratch scratch_;
};

}  // namespace

std::unique_ptr<GpuDetectOutput> make_cuda_detect_output(NativeSession& session, int cuda_index, const std::string& device_name) {
  return std::make_unique<CudaDetectOutput>(session, cuda_index, device_name);
}

}  // namespace sd::native

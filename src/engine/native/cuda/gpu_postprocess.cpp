#include "engine/native/cuda/gpu_postprocess.h"

#include <algorithm>

namespace sd::native::cuda {
namespace {

Status kernel_status(int e, const char* what) {
  return cuda_status(static_cast<cudaError_t>(e), what, __FILE__, __LINE__);
}

}  // namespace

Status nms_gpu(const GpuBox* boxes, int n, const GpuNmsParams& params, GpuPostprocessScratch& scratch, cudaStream_t stream,
               Detections& out) {
  out.clear();
  if (n <= 0) return ok();
  size_t bytes = 0;
  SD_TRY(kernel_status(nms_scratch_bytes(n, &bytes), "nms_scratch_bytes (cub::DeviceRadixSort::SortPairs)"));
  SD_TRY(scratch.nms.reserve(bytes));
  const int room = params.max_det > 0 ? std::min(n, params.max_det) : n;
  SD_TRY(scratch.kept.reserve(static_cast<size_t>(room) * sizeof(GpuBox)));
  SD_TRY(scratch.counts.reserve(2 * sizeof(int)));
  int* kept_count = scratch.counts.get<int>() + 1;
  SD_TRY(kernel_status(launch_nms(boxes, n, params, scratch.nms.get(), scratch.nms.bytes(), scratch.kept.get<GpuBox>(),
                                  kept_count, stream),
                       "launch_nms"));
  int kept = 0;
  SD_CUDA_TRY(cudaMemcpyAsync(&kept, kept_count, sizeof kept, cudaMemcpyDeviceToHost, stream));
  SD_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<GpuBox> host(static_cast<size_t>(kept));
  if (kept > 0) {
    SD_CUDA_TRY(cudaMemcpyAsync(host.data(), scratch.kept.get(), host.size() * sizeof(GpuBox), cudaMemcpyDeviceToHost, stream));
    SD_CUDA_TRY(cudaStreamSynchronize(stream));
  }
  out.reserve(host.size());
  for (const GpuBox& b : host) out.push_back(Detection{b.x1, b.y1, b.x2, b.y2, b.score, b.class_id});
  return ok();
}

namespace {

// Runs `launch` (a decode into the candidates) then nms_gpu on what it found.
template <class Launch>
Status decode_then_nms(int64_t anchors, Launch&& launch, const char* what, const GpuNmsParams& params,
                       GpuPostprocessScratch& scratch, cudaStream_t stream, Detections& out) {
  SD_TRY(scratch.candidates.reserve(static_cast<size_t>(anchors) * sizeof(GpuBox)));
  SD_TRY(scratch.counts.reserve(2 * sizeof(int)));
  int* count = scratch.counts.get<int>();
  SD_CUDA_TRY(cudaMemsetAsync(count, 0, sizeof(int), stream));
  SD_TRY(kernel_status(launch(scratch.candidates.get<GpuBox>(), count), what));
  // The candidate count sizes the sort and the overlap matrix: one 4-byte read back.
  int n = 0;
  SD_CUDA_TRY(cudaMemcpyAsync(&n, count, sizeof n, cudaMemcpyDeviceToHost, stream));
  SD_CUDA_TRY(cudaStreamSynchronize(stream));
  return nms_gpu(scratch.candidates.get<GpuBox>(), n, params, scratch, stream, out);
}

}  // namespace

Status decode_nms_objectness_gpu(const ObjectnessHeadView& head, float conf_threshold, const GpuNmsParams& params,
                                 GpuPostprocessScratch& scratch, cudaStream_t stream, Detections& out) {
  out.clear();
  if (head.anchors <= 0 || head.num_classes < 1) return ok();
  if (head.num_strides < 0 || head.num_strides > 4) return fail(ErrorCode::kInternal, "decode_nms_objectness_gpu: 0 to 4 strides");
  if (head.num_strides > 0) {
    int64_t cells = 0;
    for (int i = 0; i < head.num_strides; ++i) {
      const int s = head.strides[i];
      if (s <= 0 || head.input_width <= 0 || head.input_height <= 0) return ok();
      cells += static_cast<int64_t>((head.input_width + s - 1) / s) * ((head.input_height + s - 1) / s);
    }
    if (cells != head.anchors) return ok();
  }
  return decode_then_nms(
      head.anchors, [&](GpuBox* boxes, int* count) { return launch_decode_objectness(head, conf_threshold, boxes, count, stream); },
      "launch_decode_objectness", params, scratch, stream, out);
}

Status decode_nms_yolov8_gpu(const YoloV8HeadView& head, float conf_threshold, const GpuNmsParams& params,
                             GpuPostprocessScratch& scratch, cudaStream_t stream, Detections& out) {
  out.clear();
  if (head.anchors <= 0 || head.num_classes < 1) return ok();
  return decode_then_nms(
      head.anchors, [&](GpuBox* boxes, int* count) { return launch_decode_yolov8(head, conf_threshold, boxes, count, stream); },
      "launch_decode_yolov8", params, scratch, stream, out);
}

}  // namespace sd::native::cuda

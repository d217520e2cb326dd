// Decode + NMS on the GPU with only the kept boxes copied back (detect_kernels.h underneath):
// plain functions on a stream, device scratch reused across frames, errors naming the CUDA call.
// Not yet called by the pipeline (docs/gpu.md, "Frames on the GPU").
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/detection.h"
#include "core/error.h"
#include "engine/native/cuda/detect_kernels.h"
#include "engine/native/cuda/device_buffer.h"

namespace sd::native::cuda {

// Device scratch of one stream; grows to the largest head and candidate count seen.
struct GpuPostprocessScratch {
  DeviceBuffer candidates, counts, nms, kept;
};

// Class-aware (agnostic: any class) NMS of `n` boxes already in device memory; the kept boxes,
// best first, replace `out`. Same kept set and order as Nms::run on the same boxes given in
// `index` order. Waits for the stream (the kept boxes are read back).
Status nms_gpu(const GpuBox* boxes, int n, const GpuNmsParams& params, GpuPostprocessScratch& scratch, cudaStream_t stream,
               Detections& out);

// YOLOv8 head decode (YoloV8Decoder's candidates, conf_threshold) then nms_gpu.
Status decode_nms_yolov8_gpu(const YoloV8HeadView& head, float conf_threshold, const GpuNmsParams& params,
                             GpuPostprocessScratch& scratch, cudaStream_t stream, Detections& out);

// YOLOv5 or YOLOX head decode (YoloV5Decoder's / YoloXDecoder's candidates) then nms_gpu. A YOLOX
// head whose anchors are not its grids' cells yields nothing (as the CPU decoder).
Status decode_nms_objectness_gpu(const ObjectnessHeadView& head, float conf_threshold, const GpuNmsParams& params,
                                 GpuPostprocessScratch& scratch, cudaStream_t stream, Detections& out);

}  // namespace sd::native::cuda

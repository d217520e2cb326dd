// Detection heads decoded and boxes suppressed on the GPU (detect_kernels.cu), with the CPU's
// postprocess/ as the reference: the same candidates as YoloV8Decoder and the same kept boxes,
// in the same order, as Nms::run. Plain C++; launchers return the cudaError_t as an int.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sd::native::cuda {

// One candidate box in network pixels. `index` is its position in the CPU decoder's output order
// (the anchor for YOLOv8), which breaks score ties as the CPU's sort does.
struct GpuBox {
  float x1, y1, x2, y2, score;
  int class_id, index;
};

// A YOLOv8 head of one image, device memory: [4+nc, anchors] (channel-major, transposed = false)
// or [anchors, 4+nc].
struct YoloV8HeadView {
  const float* data = nullptr;
  int64_t anchors = 0;
  int num_classes = 0;
  bool transposed = false;
};

// Every anchor whose best class score is >= conf (the first class of the highest score, as the
// CPU's argmax) as a box at out[atomicAdd(count)]; `count` (device int) must be 0 before, `out`
// room for `anchors` boxes. The slots' order varies from run to run: the sort by (score, index)
// makes the result deterministic.
int launch_decode_yolov8(const YoloV8HeadView& head, float conf, GpuBox* out, int* count, void* stream);

// A head of rows [anchors, 5+nc] with objectness (one image, device memory): YOLOv5 (cx, cy, w,
// h in input pixels; num_strides == 0) or YOLOX (offsets and log sizes on the grids of
// `strides`, level after level, row-major, of ceil(input / stride) cells each).
struct ObjectnessHeadView {
  const float* data = nullptr;
  int64_t anchors = 0;
  int num_classes = 0;
  int num_strides = 0;  // 0: YOLOv5
  int strides[4] = {};
  int input_width = 0, input_height = 0;  // YOLOX only
};

// YoloV5Decoder / YoloXDecoder: objectness >= conf, best class (first of the highest score),
// score = objectness * class score >= conf. As launch_decode_yolov8 otherwise. YOLOX's exp is
// CUDA's expf (within 2 ulp of glibc's): its boxes can differ from the CPU's in the last bits.
int launch_decode_objectness(const ObjectnessHeadView& head, float conf, GpuBox* out, int* count, void* stream);

struct GpuNmsParams {
  float iou_threshold = 0.45f;
  bool agnostic = false;
  int max_det = 300;  // <= 0: no limit
};

// Scratch bytes launch_nms needs for n boxes (the sort's keys and CUB's temporary storage, the
// sorted boxes, and the n x ceil(n/64) overlap bit matrix: n^2/8 bytes).
int nms_scratch_bytes(int n, size_t* bytes);

// Class-aware (or agnostic) greedy NMS of the n boxes at `boxes`: sorted by descending score
// then ascending index (CUB radix sort of one 64-bit key, as Nms::run's std::sort), a 64x64 tile
// per block marks IoU > threshold pairs of the same class in a bit matrix (as torchvision's NMS),
// and one block walks it in order. Writes the kept boxes, best first, at `kept` (room for
// min(n, max_det)) and their number at `kept_count` (device int).
int launch_nms(const GpuBox* boxes, int n, const GpuNmsParams& p, void* scratch, size_t scratch_bytes, GpuBox* kept,
               int* kept_count, void* stream);

}  // namespace sd::native::cuda

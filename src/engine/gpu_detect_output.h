// An inference context's capability to decode its last run's detection head and run NMS on its
// GPU, only the kept boxes copied back (docs/gpu.md, "Frames on the GPU"): the pipeline's
// `--postprocess-on gpu`. InferenceContext::gpu_detect_output() hands it out where the context
// runs on a CUDA device (native engine); elsewhere it is nullptr and the CPU decodes
// (runtime/postprocess_on.h). Plain C++, no CUDA.
#pragma once

#include <string>

#include "core/detection.h"
#include "core/error.h"

namespace sd {

// The heads the GPU decodes, as the CPU's decoders describe them (postprocess/yolo*_decoder.h).
struct GpuDetectHead {
  enum class Kind { kYoloV8, kYoloV5, kYoloX } kind = Kind::kYoloV8;
  int output = 0;            // the head's index among the model's outputs
  int num_classes = 0;
  bool transposed = false;   // YOLOv8: [N, A, 4+nc] instead of [N, 4+nc, A]
  int num_strides = 0;       // YOLOX: its grids' strides (at most 4), and the network input size
  int strides[4] = {};
  int input_width = 0, input_height = 0;
};

struct GpuDetectParams {
  float conf_threshold = 0.25f;
  float iou_threshold = 0.45f;
  bool agnostic = false;
  int max_det = 300;  // <= 0: no limit
};

class GpuDetectOutput {
 public:
  virtual ~GpuDetectOutput() = default;
  // The kept boxes of image `image` of the context's last run (network-input pixels, best first,
  // at most max_det), decoded and NMS'd where the run left the head: replaces `out`. Fails
  // (kUnsupported) where the head is not on the GPU (its last step ran on the CPU) or its shape
  // is not the head's; the caller then decodes the host copy.
  virtual Status detect(const GpuDetectHead& head, const GpuDetectParams& params, int image, Detections& out) = 0;
  // For the log and the profile: "cuda:0 (decode + NMS kernels on the output, kept boxes copied back)".
  virtual std::string where() const = 0;
};

}  // namespace sd

// Fits a BGR frame into the network input (letterbox or stretch) and writes the NCHW float
// planes in one pass; records the transform so boxes map back to the original frame exactly.
#pragma once

#include <opencv2/core/mat.hpp>

#include "core/detection.h"
#include "preprocess/preprocess_spec.h"

namespace sd {

// network = frame * scale + pad, per axis.
struct LetterboxTransform {
  float scale_x = 1, scale_y = 1;
  float pad_x = 0, pad_y = 0;
  int src_width = 0, src_height = 0;  // original frame
  int dst_width = 0, dst_height = 0;  // network input

  static LetterboxTransform compute(cv::Size src, cv::Size dst, ResizeMode mode, PadPlacement pad);
  // Maps a box from network pixels back to frame pixels, clipped to the frame.
  void map_back(Detection& d) const;
  // Maps a box from frame pixels into network pixels (for tests and ground truth).
  void map_forward(Detection& d) const;
};

// Scratch buffers reused across frames (no allocation per frame in steady state).
struct PreprocessScratch {
  cv::Mat resized;
};

// Writes 3 planes of dst.height x dst.width floats at `chw` (the caller's input tensor slot).
LetterboxTransform preprocess_frame(const cv::Mat& bgr, cv::Size dst, const PreprocessSpec& spec,
                                    float* chw, PreprocessScratch& scratch);

}  // namespace sd

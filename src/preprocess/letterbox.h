// Fits a frame into the network input (letterbox or stretch) and writes the NCHW float planes in
// one pass; records the transform so boxes map back to the original frame exactly. BGR frames are
// resized then converted; I420 frames (video decoders' output) have their planes resized and go
// from YUV straight to the network's normalized RGB/BGR floats, with no BGR image in between.
#pragma once

#include <opencv2/core/mat.hpp>

#include "core/detection.h"
#include "core/frame.h"
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
  cv::Mat resized;      // BGR content
  cv::Mat y, u, v;      // I420 planes at the content size
};

// Writes 3 planes of dst.height x dst.width floats at `chw` (the caller's input tensor slot).
LetterboxTransform preprocess_frame(const cv::Mat& bgr, cv::Size dst, const PreprocessSpec& spec,
                                    float* chw, PreprocessScratch& scratch);
// `i420`: Y plane (height x width) then U then V (height/2 x width/2 each), BT.601 limited
// range, even width and height.
LetterboxTransform preprocess_i420(const cv::Mat& i420, cv::Size dst, const PreprocessSpec& spec, float* chw,
                                   PreprocessScratch& scratch);
// Whichever format the frame holds.
LetterboxTransform preprocess_frame(const Frame& frame, cv::Size dst, const PreprocessSpec& spec, float* chw,
                                    PreprocessScratch& scratch);

}  // namespace sd

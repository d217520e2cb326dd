// Frames into the network input on the GPU (frame_kernels.cu): letterbox + bilinear resize +
// pad + scale/normalize + channel order + layout in one pass, from a pitched uint8 BGR image or
// an NV12 surface (as NVDEC hands them out) in device memory. The CPU path
// (preprocess/letterbox.cpp) is the reference; what differs is documented at each function.
// Plain C++ so that any file can include it; the launchers return the launch's cudaError_t as an int.
#pragma once

#include <cstdint>

namespace sd::native::cuda {

// Where the resized content sits in the network input and what each channel gets: network
// channel c = pixel[src_channel[c]] * mul[c] + add[c] (pixel in B, G, R order), border = pad[c].
// Filled from a LetterboxTransform and a PreprocessSpec exactly as letterbox.cpp's ChannelMap
// and content size (see tests/gpu_frames_vectors.h, checked against the CPU path there).
struct InputPlacement {
  int dst_width = 0, dst_height = 0;        // network input
  int content_width = 0, content_height = 0;  // the frame resized
  int x0 = 0, y0 = 0;                        // content's top-left corner in the input
  float mul[3] = {1, 1, 1}, add[3] = {0, 0, 0}, pad[3] = {0, 0, 0};
  int src_channel[3] = {2, 1, 0};            // RGB network from BGR pixels
};

// kNchwF16: float16 planes, what a plan with fp16 storage on the device (--precision fp16) reads
// its input as (NativeSession::device_input), so that the kernel writes it there directly.
enum class InputLayout { kNchwF32, kNhwcF16, kNchwF16 };

// uint8 BGR, `pitch` bytes per row.
struct BgrImage {
  const uint8_t* data = nullptr;
  int width = 0, height = 0;
  int64_t pitch = 0;
};

// NV12: Y plane (height rows of `y_pitch` bytes) and the interleaved U, V plane at half
// resolution (height / 2 rows of `uv_pitch` bytes). Even width and height.
struct Nv12Image {
  const uint8_t* y = nullptr;
  const uint8_t* uv = nullptr;
  int width = 0, height = 0;
  int64_t y_pitch = 0, uv_pitch = 0;
};

// Writes one image of the input (dst_height x dst_width x 3) at `dst`: float or half NCHW planes,
// or half NHWC pixels. Resize: OpenCV INTER_LINEAR semantics (half-pixel centres, edge samples
// clamped, the interpolated value rounded to the nearest uint8 as cv::resize's 8-bit output is),
// computed in float where OpenCV uses 11-bit fixed-point weights: at most one uint8 level apart.
int launch_letterbox_bgr(const BgrImage& src, const InputPlacement& p, InputLayout layout, void* dst, void* stream);

// NV12 as preprocess_i420 converts I420: when the content is the frame's size, Y read in place
// and chroma repeated 2x2 (nearest); otherwise the Y plane and each chroma plane resized
// bilinearly to the content size (rounded to uint8, as above). Then BT.601 limited range with
// OpenCV's coefficients, clamped to 0..255, unrounded, into the network's values.
int launch_letterbox_nv12(const Nv12Image& src, const InputPlacement& p, InputLayout layout, void* dst, void* stream);

}  // namespace sd::native::cuda

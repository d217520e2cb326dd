// H.264 and HEVC decoded on the GPU by NVDEC (libnvcuvid, loaded at run time: nvdec_library.h),
// from Annex-B elementary-stream bytes (what FFmpeg's h264_mp4toannexb / hevc_mp4toannexb bitstream
// filters make of MP4/MKV packets, or a raw .h264/.hevc stream), into NV12 frames in device memory,
// in display order with their PTS. Each decoded surface is copied at once into a buffer of the
// decoder's own small pool and released, so NVDEC never waits for the consumer; a frame holds its
// buffer until it is destroyed. The CUDA context is the runtime's primary context of the device
// (the one the CUDA backend's kernels run in), so the frames can go to letterbox_nv12_gpu
// (gpu_preprocess.h) without a copy. No CUDA header here: streamdet's sources include it in
// builds without CUDA too (nvdec_unavailable.cpp). docs/gpu.md, "NVDEC".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/device_frame.h"
#include "core/error.h"

namespace sd::native::cuda {

enum class NvdecCodec { kH264, kHevc };
const char* nvdec_codec_name(NvdecCodec codec);  // "H.264", "HEVC"

// One decoded frame in device memory, NV12: `height` rows of luma, then height / 2 rows of
// interleaved U, V, both `pitch` bytes apart. Even width and height. Move-only; its buffer goes back
// to the decoder's pool when it is destroyed (from any thread; it may outlive the decoder), or when
// the last copy of handle() lets go, where the frame was handed on (Frame::device).
class NvdecFrame {
 public:
  NvdecFrame() = default;
  explicit NvdecFrame(DeviceFrameRef ref) : ref_(std::move(ref)) {}
  NvdecFrame(NvdecFrame&&) noexcept = default;
  NvdecFrame& operator=(NvdecFrame&&) noexcept = default;
  NvdecFrame(const NvdecFrame&) = delete;
  NvdecFrame& operator=(const NvdecFrame&) = delete;

  const uint8_t* luma() const { return ref_.nv12().luma; }      // device pointer
  const uint8_t* chroma() const { return ref_.nv12().chroma; }  // device pointer: interleaved U, V
  int64_t pitch() const { return ref_.nv12().pitch; }
  int width() const { return ref_.nv12().width; }
  int height() const { return ref_.nv12().height; }
  int64_t pts() const { return ref_.pts(); }  // as given to decode() with the frame's packet
  // The frame into host memory as NV12: `dst` holds height * 3 / 2 rows of `dst_pitch` bytes.
  Status download_nv12(uint8_t* dst, int64_t dst_pitch) const { return ref_.download_nv12(dst, dst_pitch); }
  // The buffer's handle, to share the frame without a copy of its pixels.
  const DeviceFrameRef& handle() const { return ref_; }

 private:
  DeviceFrameRef ref_;
};

// The decoder's frame buffers: at most `frames` held by consumers (the decoder then waits for one
// to come back: back-pressure, never more GPU memory), and how long it waits before it calls the
// consumer stuck (an error).
struct NvdecPoolOptions {
  int frames = 32;
  double stall_ms = 60'000;
};

class NvdecDecoder {
 public:
  // A decoder for `codec` on CUDA device `device`. Errors, one line each: the library or the
  // driver is missing, no such device (kUnsupported), this GPU's NVDEC does not decode the codec
  // (kUnsupported), or a call failed (named, with its CUDA error).
  static Result<std::unique_ptr<NvdecDecoder>> create(NvdecCodec codec, int device = 0, NvdecPoolOptions pool = {});
  ~NvdecDecoder();
  NvdecDecoder(const NvdecDecoder&) = delete;
  NvdecDecoder& operator=(const NvdecDecoder&) = delete;

  // One access unit (one picture: a demuxer's packet) of Annex-B bytes with its PTS. The frames it
  // completes (none, one, or several: reordering) are then ready for next().
  Status decode(const uint8_t* data, size_t size, int64_t pts);
  // The end of the stream: every frame still held by the parser becomes ready.
  Status flush();
  // The next frame in display order, or nullopt when none is ready.
  std::optional<NvdecFrame> next();

  // "NVDEC H.264 640x360, 7 decode surfaces" once the stream's sequence header was seen.
  std::string describe() const;
  // Pictures NVDEC reported as decoded with errors (concealed) so far.
  int64_t damaged_pictures() const;

  struct State;  // nvdec_decoder.cpp

 private:
  explicit NvdecDecoder(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// Whether NVDEC can decode `codec` (8-bit 4:2:0) on `device`: ok, or the one line saying why not
// (library or driver missing, no GPU, this GPU's NVDEC lacks the codec). Cheap after the first call.
Status nvdec_support(NvdecCodec codec, int device = 0);
// What `--version` prints after "nvdec: ": "found, libnvcuvid.so.1: H.264, HEVC on cuda:0", or
// "missing, <why>: video is decoded on the CPU".
std::string nvdec_summary();

}  // namespace sd::native::cuda

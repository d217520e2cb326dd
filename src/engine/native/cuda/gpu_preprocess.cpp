#include "engine/native/cuda/gpu_preprocess.h"

#include "engine/native/cuda/cuda_check.h"

namespace sd::native::cuda {
namespace {

// The frame and the placement agree (a bad one would read or write out of bounds).
Status check(int width, int height, const InputPlacement& p, const char* what) {
  if (width < 1 || height < 1 || p.dst_width < 1 || p.dst_height < 1 || p.content_width < 1 || p.content_height < 1 ||
      p.x0 < 0 || p.y0 < 0 || p.x0 + p.content_width > p.dst_width || p.y0 + p.content_height > p.dst_height)
    return fail(ErrorCode::kInternal, std::string(what) + ": the content does not fit the input or the frame is empty");
  for (int c : p.src_channel)
    if (c < 0 || c > 2) return fail(ErrorCode::kInternal, std::string(what) + ": channel index out of 0..2");
  return ok();
}

}  // namespace

Status letterbox_bgr_gpu(const BgrImage& src, const InputPlacement& placement, InputLayout layout, void* dst,
                         cudaStream_t stream) {
  SD_TRY(check(src.width, src.height, placement, "letterbox_bgr_gpu"));
  if (src.pitch < 3 * static_cast<int64_t>(src.width)) return fail(ErrorCode::kInternal, "letterbox_bgr_gpu: pitch under 3 x width");
  return cuda_status(static_cast<cudaError_t>(launch_letterbox_bgr(src, placement, layout, dst, stream)),
                     "launch_letterbox_bgr", __FILE__, __LINE__);
}

Status letterbox_nv12_gpu(const Nv12Image& src, const InputPlacement& placement, InputLayout layout, void* dst,
                          cudaStream_t stream) {
  SD_TRY(check(src.width, src.height, placement, "letterbox_nv12_gpu"));
  if (src.width % 2 || src.height % 2) return fail(ErrorCode::kInternal, "letterbox_nv12_gpu: odd width or height");
  if (src.y_pitch < src.width || src.uv_pitch < src.width)
    return fail(ErrorCode::kInternal, "letterbox_nv12_gpu: pitch under the width");
  return cuda_status(static_cast<cudaError_t>(launch_letterbox_nv12(src, placement, layout, dst, stream)),
                     "launch_letterbox_nv12", __FILE__, __LINE__);
}

}  // namespace sd::native::cuda

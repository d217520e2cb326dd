// cuda_backend.h in a build without the CUDA toolkit: streamdet runs on the CPU and says so.
#include "engine/native/cuda/cuda_backend.h"

namespace sd::native {

Result<std::shared_ptr<const Backend>> cuda_backend(int) {
  return fail(ErrorCode::kUnsupported, "this streamdet was built without CUDA (no CUDA toolkit when it was built): CPU only");
}

CudaInfo cuda_info() {
  CudaInfo info;
  info.problem = "built without CUDA";
  return info;
}

Status cuda_device_status(int) { return ok(); }

void set_cuda_conv_graph_planning_budget(double) {}
void grant_cuda_conv_graph_planning(double) {}
double cuda_conv_graph_planning_spent() { return 0; }
double cuda_conv_graph_planning_budget() { return 0; }

}  // namespace sd::native

// gpu_frame_staging.h without CUDA: no context letterboxes on a GPU.
#include "engine/native/cuda/gpu_frame_staging.h"

namespace sd::native {
std::unique_ptr<GpuFrameInput> make_cuda_frame_input(NativeSession&, int, const std::string&, const uint64_t*) { return nullptr; }
}  // namespace sd::native

// gpu_detect_output.h without CUDA: no context decodes on a GPU.
#include "engine/native/cuda/gpu_detect_output.h"

namespace sd::native {
std::unique_ptr<GpuDetectOutput> make_cuda_detect_output(NativeSession&, int, const std::string&, uint64_t*) { return nullptr; }
}  // namespace sd::native

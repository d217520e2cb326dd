// CUDA runtime errors as values: the call, the error's name and text, and where.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace sd::native::cuda {

inline Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return ok();
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  // Out of device memory is the model's size against this GPU: the model's exit code.
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::kModel : ErrorCode::kInternal;
  return fail(code, std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " + call + " at " +
                        base + ":" + std::to_string(line));
}

}  // namespace sd::native::cuda

#define SD_CUDA_TRY(call) SD_TRY(::sd::native::cuda::cuda_status((call), #call, __FILE__, __LINE__))

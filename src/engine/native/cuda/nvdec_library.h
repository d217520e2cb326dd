// NVIDIA's video decoder library (libnvcuvid) and the two driver calls NVDEC needs beside it
// (libcuda: the current context, error names), loaded at run time with dlopen: streamdet has no
// link-time dependency on either, starts where they are missing and then decodes on the CPU. The
// types and signatures come from Debian's libffmpeg-nvenc-dev (ffnvcodec's dynlink_cuviddec.h,
// dynlink_nvcuvid.h: the same headers FFmpeg's own cuviddec is built with). docs/gpu.md, "NVDEC".
#pragma once

#include <ffnvcodec/dynlink_cuda.h>
#include <ffnvcodec/dynlink_cuviddec.h>
#include <ffnvcodec/dynlink_nvcuvid.h>

#include <memory>
#include <string>

#include "core/error.h"

namespace sd::native::cuda {

class NvcuvidLibrary {
 public:
  // The entry points, resolved with dlsym; all non-null once open() succeeded.
  struct Api {
    tcuvidGetDecoderCaps* GetDecoderCaps;
    tcuvidCreateDecoder* CreateDecoder;
    tcuvidDestroyDecoder* DestroyDecoder;
    tcuvidDecodePicture* DecodePicture;
    tcuvidGetDecodeStatus* GetDecodeStatus;
    tcuvidMapVideoFrame64* MapVideoFrame64;
    tcuvidUnmapVideoFrame64* UnmapVideoFrame64;
    tcuvidCreateVideoParser* CreateVideoParser;
    tcuvidParseVideoData* ParseVideoData;
    tcuvidDestroyVideoParser* DestroyVideoParser;
    // From libcuda (the driver the CUDA runtime already loaded):
    tcuCtxPushCurrent_v2* CtxPushCurrent;
    tcuCtxPopCurrent_v2* CtxPopCurrent;
    tcuGetErrorName* GetErrorName;
    CUresult (*CtxGetCurrent)(CUcontext*);  // not in ffnvcodec's table; cuda.h's signature
  };

  // Loads `nvcuvid` and `cuda` (sonames or paths) and resolves every entry point. Errors, one line
  // (kUnsupported): a library is not found (dlerror's text), or lacks a symbol.
  static Result<std::unique_ptr<NvcuvidLibrary>> open(const std::string& nvcuvid, const std::string& cuda);
  // The process's ("libnvcuvid.so.1", "libcuda.so.1"), loaded once on first use; nullptr where
  // either is missing, and then shared_problem() is the one line that says why.
  static const NvcuvidLibrary* shared();
  static std::string shared_problem();

  ~NvcuvidLibrary();
  NvcuvidLibrary(const NvcuvidLibrary&) = delete;
  NvcuvidLibrary& operator=(const NvcuvidLibrary&) = delete;

  const Api& api() const { return api_; }
  const std::string& path() const { return nvcuvid_name_; }
  // ok() for CUDA_SUCCESS, else "NVDEC <call> failed: CUDA_ERROR_... (n)" (kInternal; kUnsupported
  // for CUDA_ERROR_NOT_SUPPORTED / NO_DEVICE: a GPU or driver that cannot decode this).
  Status check(CUresult result, const char* call) const;

 private:
  NvcuvidLibrary(void* nvcuvid, void* cuda, std::string name) : nvcuvid_(nvcuvid), cuda_(cuda), nvcuvid_name_(std::move(name)) {}
  void* nvcuvid_;
  void* cuda_;
  std::string nvcuvid_name_;
  Api api_{};
};

}  // namespace sd::native::cuda

// Calls lib.api().<fn>(args...) and returns its error from the enclosing function.
#define SD_CUVID_TRY(lib, fn, ...) SD_TRY((lib).check((lib).api().fn(__VA_ARGS__), "cuvid" #fn))

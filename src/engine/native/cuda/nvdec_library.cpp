#include "engine/native/cuda/nvdec_library.h"

#include <dlfcn.h>

namespace sd::native::cuda {
namespace {

template <typename F>
void resolve(void* handle, const char* symbol, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!fn && missing.empty()) missing = symbol;
}

Result<void*> load(const std::string& name, const char* what) {
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle) return handle;
  const char* why = dlerror();
  return fail(ErrorCode::kUnsupported, std::string("NVDEC not available: cannot load ") + name + " (" + what + "; " +
                                           (why ? why : "unknown reason") + ")");
}

}  // namespace

Result<std::unique_ptr<NvcuvidLibrary>> NvcuvidLibrary::open(const std::string& nvcuvid, const std::string& cuda) {
  SD_ASSIGN_OR_RETURN(void* cuda_handle, load(cuda, "the NVIDIA driver's CUDA library"));
  auto nvcuvid_handle = load(nvcuvid, "the NVIDIA driver's video decoder library");
  if (!nvcuvid_handle) {
    dlclose(cuda_handle);
    return tl::unexpected(nvcuvid_handle.error());
  }
  std::unique_ptr<NvcuvidLibrary> lib(new NvcuvidLibrary(*nvcuvid_handle, cuda_handle, nvcuvid));
  Api& a = lib->api_;
  std::string missing;
  void* h = *nvcuvid_handle;
  resolve(h, "cuvidGetDecoderCaps", a.GetDecoderCaps, missing);
  resolve(h, "cuvidCreateDecoder", a.CreateDecoder, missing);
  resolve(h, "cuvidDestroyDecoder", a.DestroyDecoder, missing);
  resolve(h, "cuvidDecodePicture", a.DecodePicture, missing);
  resolve(h, "cuvidGetDecodeStatus", a.GetDecodeStatus, missing);
  resolve(h, "cuvidMapVideoFrame64", a.MapVideoFrame64, missing);
  resolve(h, "cuvidUnmapVideoFrame64", a.UnmapVideoFrame64, missing);
  resolve(h, "cuvidCreateVideoParser", a.CreateVideoParser, missing);
  resolve(h, "cuvidParseVideoData", a.ParseVideoData, missing);
  resolve(h, "cuvidDestroyVideoParser", a.DestroyVideoParser, missing);
  if (!missing.empty()) return fail(ErrorCode::kUnsupported, "NVDEC not available: " + nvcuvid + " lacks " + missing);
  resolve(cuda_handle, "cuCtxPushCurrent_v2", a.CtxPushCurrent, missing);
  resolve(cuda_handle, "cuCtxPopCurrent_v2", a.CtxPopCurrent, missing);
  resolve(cuda_handle, "cuGetErrorName", a.GetErrorName, missing);
  resolve(cuda_handle, "cuCtxGetCurrent", a.CtxGetCurrent, missing);
  if (!missing.empty()) return fail(ErrorCode::kUnsupported, "NVDEC not available: " + cuda + " lacks " + missing);
  return lib;
}

NvcuvidLibrary::~NvcuvidLibrary() {
  dlclose(nvcuvid_);
  dlclose(cuda_);
}

Status NvcuvidLibrary::check(CUresult result, const char* call) const {
  if (result == CUDA_SUCCESS) return ok();
  const char* name = nullptr;
  if (api_.GetErrorName) api_.GetErrorName(result, &name);
  // ffnvcodec's CUresult names only a few codes: cuda.h's CUDA_ERROR_NO_DEVICE (100) and
  // CUDA_ERROR_NOT_SUPPORTED (801) by number.
  const int r = static_cast<int>(result);
  const ErrorCode code = r == 100 || r == 801 ? ErrorCode::kUnsupported : ErrorCode::kInternal;
  return fail(code, std::string("NVDEC ") + call + " failed: " + (name ? name : "unknown error") + " (" +
                        std::to_string(static_cast<int>(result)) + ")");
}

namespace {
struct SharedLibrary {
  std::unique_ptr<NvcuvidLibrary> lib;
  std::string problem;
};
// Never destroyed (never dlclose'd): decoders held by static objects may outlive main().
const SharedLibrary& shared_library() {
  static const SharedLibrary* s = [] {
    auto* r = new SharedLibrary;
    auto lib = NvcuvidLibrary::open("libnvcuvid.so.1", "libcuda.so.1");
    if (lib)
      r->lib = std::move(*lib);
    else
      r->problem = lib.error().message;
    return r;
  }();
  return *s;
}
}  // namespace

const NvcuvidLibrary* NvcuvidLibrary::shared() { return shared_library().lib.get(); }
std::string NvcuvidLibrary::shared_problem() { return shared_library().problem; }

}  // namespace sd::native::cuda

#include "engine/native/cuda/cudnn_library.h"

#include <dlfcn.h>

#include <mutex>


namespace sd::native::cuda {
namespace {

template <typename F>
bool resolve(void* handle, const char* symbol, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!fn && missing.empty()) missing = symbol;
  return fn != nullptr;
}

}  // namespace

Result<std::unique_ptr<CudnnLibrary>> CudnnLibrary::open(const std::string& name) {
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return fail(ErrorCode::kUnsupported, "cuDNN not found: cannot load " + name + " (" + (why ? why : "unknown reason") + ")");
  }
  std::unique_ptr<CudnnLibrary> lib(new CudnnLibrary(handle, name));
  Api& a = lib->api_;
  std::string missing;
#define SD_RESOLVE(fn) resolve(handle, "cudnn" #fn, a.fn, missing)
  SD_RESOLVE(GetVersion), SD_RESOLVE(GetErrorString), SD_RESOLVE(Create), SD_RESOLVE(Destroy), SD_RESOLVE(SetStream);
  SD_RESOLVE(CreateTensorDescriptor), SD_RESOLVE(SetTensor4dDescriptorEx), SD_RESOLVE(DestroyTensorDescriptor);
  SD_RESOLVE(CreateFilterDescriptor), SD_RESOLVE(SetFilter4dDescriptor), SD_RESOLVE(DestroyFilterDescriptor);
  SD_RESOLVE(CreateConvolutionDescriptor), SD_RESOLVE(SetConvolution2dDescriptor), SD_RESOLVE(SetConvolutionGroupCount);
  SD_RESOLVE(SetConvolutionMathType), SD_RESOLVE(GetConvolution2dForwardOutputDim), SD_RESOLVE(DestroyConvolutionDescriptor);
  SD_RESOLVE(GetConvolutionForwardAlgorithm_v7), SD_RESOLVE(GetConvolutionForwardWorkspaceSize), SD_RESOLVE(ConvolutionForward);
  if (!missing.empty()) return fail(ErrorCode::kUnsupported, "cuDNN in " + name + " lacks " + missing + " (not a cuDNN 9)");
  // The backend API: optional (all or none), so that a library without it still runs the legacy path.
  SD_RESOLVE(BackendCreateDescriptor), SD_RESOLVE(BackendDestroyDescriptor), SD_RESOLVE(BackendSetAttribute);
  SD_RESOLVE(BackendGetAttribute), SD_RESOLVE(BackendFinalize), SD_RESOLVE(BackendExecute);
#undef SD_RESOLVE
  if (!missing.empty()) {
    lib->backend_api_problem_ = "cuDNN in " + name + " lacks " + missing;
    a.BackendCreateDescriptor = nullptr, a.BackendDestroyDescriptor = nullptr, a.BackendSetAttribute = nullptr;
    a.BackendGetAttribute = nullptr, a.BackendFinalize = nullptr, a.BackendExecute = nullptr;
  }
  const size_t v = lib->version();
  if (v / 10000 != 9) return fail(ErrorCode::kUnsupported, "cuDNN in " + name + " is version " + lib->version_text() + ", not 9.x");
  return lib;
}

CudnnLibrary::~CudnnLibrary() { dlclose(handle_); }

std::string CudnnLibrary::version_text() const {
  const size_t v = version();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

Status CudnnLibrary::check(cudnnStatus_t status, const char* call) const {
  if (status == CUDNN_STATUS_SUCCESS) return ok();
  const char* text = api_.GetErrorString ? api_.GetErrorString(status) : nullptr;
  return fail(ErrorCode::kInternal, std::string("cuDNN ") + call + " failed: " + (text ? text : "unknown status") + " (" +
                                        std::to_string(static_cast<int>(status)) + ")");
}

namespace {
struct SharedLibrary {
  std::unique_ptr<CudnnLibrary> lib;
  std::string problem;
};
// Deliberately never destroyed (never dlclose'd): kernels held by other static objects may still
// destroy their descriptors during the process's exit.
const SharedLibrary& shared_library() {
  static const SharedLibrary* s = [] {
    auto* r = new SharedLibrary;
    auto lib = CudnnLibrary::open("libcudnn.so.9");
    if (lib)
      r->lib = std::move(*lib);
    else
      r->problem = lib.error().message + ": convolutions on the GPU use streamdet's direct kernel";
    return r;
  }();
  return *s;
}
}  // namespace

const CudnnLibrary* CudnnLibrary::shared() { return shared_library().lib.get(); }
std::string CudnnLibrary::shared_problem() { return shared_library().problem; }

}  // namespace sd::native::cuda

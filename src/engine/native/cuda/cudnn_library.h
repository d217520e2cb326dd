// cuDNN loaded at run time (dlopen "libcudnn.so.9"): streamdet has no link-time dependency on it,
// starts where it is missing and then runs every convolution on its direct kernel (conv.cu). The
// types and signatures come from the toolkit's cudnn.h (9.19 here); only API present since cuDNN
// 9.0 is used (the legacy convolution API, which libcudnn.so.9's shim exports and forwards to
// libcudnn_cnn), because the GPU machine's cuDNN (PyTorch's nvidia-cudnn-cu13 wheel) may be another
// 9.x. Every call's status is checked and named (cudnnGetErrorString) in the error.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "core/error.h"

namespace sd::native::cuda {

class CudnnLibrary {
 public:
  // The table of entry points, resolved with dlsym; all non-null once open() succeeded, but for
  // the optional backend API's (has_backend_api()).
  struct Api {
    decltype(&cudnnGetVersion) GetVersion;
    decltype(&cudnnGetErrorString) GetErrorString;
    decltype(&cudnnCreate) Create;
    decltype(&cudnnDestroy) Destroy;
    decltype(&cudnnSetStream) SetStream;
    decltype(&cudnnCreateTensorDescriptor) CreateTensorDescriptor;
    decltype(&cudnnSetTensor4dDescriptorEx) SetTensor4dDescriptorEx;
    decltype(&cudnnDestroyTensorDescriptor) DestroyTensorDescriptor;
    decltype(&cudnnCreateFilterDescriptor) CreateFilterDescriptor;
    decltype(&cudnnSetFilter4dDescriptor) SetFilter4dDescriptor;
    decltype(&cudnnDestroyFilterDescriptor) DestroyFilterDescriptor;
    decltype(&cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor;
    decltype(&cudnnSetConvolution2dDescriptor) SetConvolution2dDescriptor;
    decltype(&cudnnSetConvolutionGroupCount) SetConvolutionGroupCount;
    decltype(&cudnnSetConvolutionMathType) SetConvolutionMathType;
    decltype(&cudnnGetConvolution2dForwardOutputDim) GetConvolution2dForwardOutputDim;
    decltype(&cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor;
    decltype(&cudnnGetConvolutionForwardAlgorithm_v7) GetConvolutionForwardAlgorithm_v7;
    decltype(&cudnnGetConvolutionForwardWorkspaceSize) GetConvolutionForwardWorkspaceSize;
    decltype(&cudnnConvolutionForward) ConvolutionForward;
    // The backend (graph) API (cudnn_graph_conv.cpp), optional: where one is missing they are all
    // null, has_backend_api() is false and every convolution keeps the legacy API.
    decltype(&cudnnBackendCreateDescriptor) BackendCreateDescriptor;
    decltype(&cudnnBackendDestroyDescriptor) BackendDestroyDescriptor;
    decltype(&cudnnBackendSetAttribute) BackendSetAttribute;
    decltype(&cudnnBackendGetAttribute) BackendGetAttribute;
    decltype(&cudnnBackendFinalize) BackendFinalize;
    decltype(&cudnnBackendExecute) BackendExecute;
  };

  // Loads `name` (a soname or a path) and resolves every entry point. Errors, one line
  // (kUnsupported): the library is not found (dlerror's text), or lacks a symbol.
  static Result<std::unique_ptr<CudnnLibrary>> open(const std::string& name);
  // The process's cuDNN ("libcudnn.so.9"), loaded once on first use; nullptr where there is none,
  // and then shared_problem() is the one line that says so (cuda_info()'s cudnn, --version).
  static const CudnnLibrary* shared();
  static std::string shared_problem();

  ~CudnnLibrary();
  CudnnLibrary(const CudnnLibrary&) = delete;
  CudnnLibrary& operator=(const CudnnLibrary&) = delete;

  const Api& api() const { return api_; }
  // Whether the backend (graph) API's entry points all resolved; else backend_api_problem() says
  // which one is missing.
  bool has_backend_api() const { return backend_api_problem_.empty(); }
  const std::string& backend_api_problem() const { return backend_api_problem_; }
  size_t version() const { return api_.GetVersion(); }  // 91900 for 9.19.0
  std::string version_text() const;                      // "9.19.0"
  const std::string& path() const { return name_; }
  // ok() for CUDNN_STATUS_SUCCESS, else "cuDNN <call> failed: CUDNN_STATUS_... " (kInternal).
  Status check(cudnnStatus_t status, const char* call) const;

 private:
  CudnnLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
  std::string backend_api_problem_;
  Api api_{};
};

}  // namespace sd::native::cuda

// Calls lib.api().<fn>(args...) and returns its error from the enclosing function.
#define SD_CUDNN_TRY(lib, fn, ...) SD_TRY((lib).check((lib).api().fn(__VA_ARGS__), "cudnn" #fn))

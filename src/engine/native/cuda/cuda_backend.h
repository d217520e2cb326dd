// The CUDA backend of the native engine (backend.h): device memory, copies and a stream per
// session through the CUDA runtime, and its own kernels for the ops it claims; every other node
// runs on the CPU backend. Built when the CUDA toolkit is found (CMake: STREAMDET_HAVE_CUDA);
// without it, and on a machine without a usable GPU, cuda_backend() says why instead.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/backend.h"

namespace sd::native {

// The backend for CUDA device `index`, shared by every session of the process. Errors (one line,
// kUnsupported): built without CUDA, no driver or one too old for this build's runtime, no such
// device.
Result<std::shared_ptr<const Backend>> cuda_backend(int index = 0);

// What --version prints: the CUDA runtime this build was made with ("" without CUDA), the
// driver's CUDA version, and each GPU the driver shows, or why none is usable.
struct CudaInfo {
  bool built = false;
  std::string runtime;              // "13.0"
  std::string driver;               // "13.0", "" without a driver
  std::vector<std::string> devices; // "cuda:0 NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)"
  std::string problem;              // why no GPU is usable, "" when one is
  // cuDNN (loaded at run time): "9.19.0 (headers 9.19.0)", or the one line saying it is missing
  // and that convolutions use the direct kernel; "" without CUDA.
  std::string cudnn;
  bool cudnn_loaded = false;
};
CudaInfo cuda_info();

// Waits for all work queued on device `index` and returns the error a kernel left there, if any
// (a launch failure or a memory fault loses the context: every later call fails too, under another
// name). The GPU check calls it after each op's cases so that a fault is charged to its op. Ok
// without CUDA.
Status cuda_device_status(int index);

// The per-process cap on the time the cuDNN graph engine spends planning convolutions
// (cudnn_engine_choice.h: 0, the graph engine off, unless set); the GPU check's --cudnn-graph-budget.
// No-op without CUDA.
void set_cuda_conv_graph_planning_budget(double seconds);
// This many seconds of graph planning more than this process has spent so far (0: off), for one
// part of a run (cudnn_engine_choice.h); no-op without CUDA.
void grant_cuda_conv_graph_planning(double seconds);
// The seconds this process has spent planning on the graph engine, and the cap as set (0: off);
// both 0 without CUDA.
double cuda_conv_graph_planning_spent();
double cuda_conv_graph_planning_budget();

}  // namespace sd::native

// The ops the CUDA backend runs: for each op type, whether it runs a given node (element types,
// ranks, constant attributes) and its kernel factory. One file per family of ops registers them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include <cuda_fp16.h>

#include "engine/native/backend.h"
#include "engine/native/op_registry.h"

namespace sd::native::cuda {

struct CudaOp {
  std::function<bool(const OpContext&)> supports;
  std::function<Result<std::unique_ptr<Kernel>>(const OpContext&)> create;
};
using CudaOpTable = std::map<std::string, CudaOp>;

// The session's CUDA stream for a kernel's launches (nullptr: the default stream).
inline void* stream_of(const ExecContext& ctx) { return ctx.stream ? ctx.stream->native_handle() : nullptr; }
// A kernel's implementation name, with "/fp16" for its fp16 instantiation (the plan and the
// profile say which ran).
template <class T>
std::string kernel_name(const char* name) {
  return std::is_same_v<T, float> ? std::string(name) : std::string(name) + "/fp16";
}
// The element type of the first `data_inputs` inputs and every output the node produces when
// they all have the same float type: float32, or float16 (--precision fp16, where the planner
// hands this backend fp16 tensors); kUndefined otherwise. What the kernels of this backend take.
DType float_io(const OpContext& ctx, size_t data_inputs);
inline bool float_io_ok(const OpContext& ctx, size_t data_inputs) { return float_io(ctx, data_inputs) != DType::kUndefined; }

void register_elementwise_ops(CudaOpTable& ops);  // elementwise_ops.cpp
void register_conv_ops(CudaOpTable& ops);         // conv_ops.cpp
void register_data_ops(CudaOpTable& ops);         // data_ops.cpp
const CudaOpTable& cuda_ops();                     // every family above, built once

}  // namespace sd::native::cuda

// The ops the CUDA backend runs: for each op type, whether it runs a given node (element types,
// ranks, constant attributes) and its kernel factory. One file per family of ops registers them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

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
// The first `data_inputs` inputs and every output the node produces are float32: what the kernels
// of this backend take so far.
bool float32_io(const OpContext& ctx, size_t data_inputs);

void register_elementwise_ops(CudaOpTable& ops);  // elementwise_ops.cpp
void register_conv_ops(CudaOpTable& ops);         // conv_ops.cpp
void register_data_ops(CudaOpTable& ops);         // data_ops.cpp
const CudaOpTable& cuda_ops();                     // every family above, built once

}  // namespace sd::native::cuda

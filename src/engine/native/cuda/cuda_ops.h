// The ops the CUDA backend runs: for each op type, whether it runs a given node (element types,
// ranks, constant attributes) and its kernel factory. One file per family of ops registers them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "engine/native/op_registry.h"

namespace sd::native::cuda {

struct CudaOp {
  std::function<bool(const OpContext&)> supports;
  std::function<Result<std::unique_ptr<Kernel>>(const OpContext&)> create;
};
using CudaOpTable = std::map<std::string, CudaOp>;

void register_elementwise_ops(CudaOpTable& ops);  // elementwise_ops.cpp
void register_conv_ops(CudaOpTable& ops);         // conv_ops.cpp
void register_data_ops(CudaOpTable& ops);         // data_ops.cpp
const CudaOpTable& cuda_ops();                     // every family above, built once

}  // namespace sd::native::cuda

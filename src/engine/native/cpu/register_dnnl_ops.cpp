// The CPU backend's oneDNN ops (dnnl_*.cpp), registered by family, and the oneDNN engine they
// share; the backend's own kernels register in register_cpu_ops.cpp.
#include "engine/native/cpu/dnnl_context.h"
#include "engine/native/op_registry.h"

namespace sd::native {
namespace dnnl_ops {
void register_conv_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);
void register_matmul_ops(OpRegistry& r);
void register_qconv_ops(OpRegistry& r);

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}
}  // namespace dnnl_ops

void register_dnnl_ops(OpRegistry& r) {
  dnnl_ops::register_conv_ops(r);
  dnnl_ops::register_pool_ops(r);
  dnnl_ops::register_matmul_ops(r);
  dnnl_ops::register_qconv_ops(r);
}

}  // namespace sd::native

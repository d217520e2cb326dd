// The CPU backend's own kernels (this folder), registered by family; oneDNN's are in
// register_dnnl_ops.cpp.
#include "engine/native/op_registry.h"
#include "engine/native/op_util.h"

namespace sd::native {

void register_cpu_ops(OpRegistry& r) {
  ops::register_elementwise_ops(r);
  ops::register_shape_ops(r);
  ops::register_data_ops(r);
  ops::register_misc_ops(r);
  ops::register_bin_expectation_op(r);
  ops::register_quant_ops(r);
  ops::register_int8_table_ops(r);
  ops::register_bf16_concat_op(r);
  ops::register_concat_planes_op(r);
}

}  // namespace sd::native

// Kept apart from op_registry.cpp so that code using only OpRegistry (kernel tests) does not pull
// in every backend.
#include "engine/native/op_registry.h"

namespace sd::native {

const OpRegistry& builtin_op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_cpu_ops(r);
    register_dnnl_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace sd::native

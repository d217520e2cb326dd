// Reordered weights shared by every kernel that wants the same constant in the same oneDNN
// format: the sessions of several inference workers over one model, and the plans a session
// builds for different input sizes. A conv's weights are reordered (and, for Winograd,
// transformed: ~10 ms for a 128x128 3x3 layer) once per process, and held once in memory.
#pragma once

#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/native/host_tensor.h"

namespace sd::native::dnnl_ops {

// `weights` (plain layout `user_md`) in the format `target`: the cached copy when one is alive,
// otherwise a new reorder. Thread-safe. Entries die with their last user; an entry whose source
// tensor has been freed is never matched.
std::shared_ptr<const dnnl::memory> shared_weights(const HostTensor& weights, const dnnl::memory::desc& user_md,
                                                   const dnnl::memory::desc& target);

// How many reorders shared_weights actually ran (for tests).
size_t weight_reorders_done();

}  // namespace sd::native::dnnl_ops

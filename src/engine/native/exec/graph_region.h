// Which steps of a plan a device backend can record once and replay as a whole (backend.h:
// BackendGraph, CUDA graphs): from the plan's first step on the device to its last, when every
// step in between runs on that device's stream (its kernels and its copies to and from the host).
// A host step in between (a node the device does not run) needs the device's results on the host
// in the middle of the run: no graph then, and the plan summary says why.
#pragma once

#include <string>

#include "engine/native/exec/plan.h"

namespace sd::native::exec {

struct GraphRegion {
  int backend = -1;            // the device backend (index into Plan::backends); -1: no device steps
  size_t first = 0, last = 0;  // the steps recorded, inclusive
  std::string why_not;         // empty: the region can be recorded
};

GraphRegion graph_region(const Plan& plan);

}  // namespace sd::native::exec

#include "engine/native/exec/graph_region.h"

namespace sd::native::exec {

GraphRegion graph_region(const Plan& plan) {
  GraphRegion r;
  bool any = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const int b = plan.steps[i].backend;
    if (plan.backends[static_cast<size_t>(b)]->device().is_host()) continue;
    if (!any) r.backend = b, r.first = i, any = true;
    if (b != r.backend) {
      r.why_not = "steps on two devices (" + plan.backends[static_cast<size_t>(r.backend)]->name() + ", " +
                  plan.backends[static_cast<size_t>(b)]->name() + ")";
      return r;
    }
    r.last = i;
  }
  if (!any) {
    r.why_not = "no step runs on a device";
    return r;
  }
  const Backend& device = *plan.backends[static_cast<size_t>(r.backend)];
  if (!device.can_capture()) {
    r.why_not = device.name() + " cannot record a run";
    return r;
  }
  for (size_t i = r.first; i <= r.last; ++i)
    if (plan.steps[i].backend != r.backend) {
      r.why_not = plan.steps[i].label + " runs on " + plan.backends[static_cast<size_t>(plan.steps[i].backend)]->name() +
                  " between the device's steps";
      return r;
    }
  return r;
}

}  // namespace sd::native::exec

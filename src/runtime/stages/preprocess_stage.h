// Letterboxes one source's frames into network inputs and hands them to the scheduler, whose lane
// for the source applies its policy.
#pragma once

#include "runtime/run_context.h"

namespace sd {

class PreprocessStage {
 public:
  PreprocessStage(RunContext& run, int source) : run_(run), s_(source) {}
  void run();

 private:
  RunContext& run_;
  int s_;
};

}  // namespace sd

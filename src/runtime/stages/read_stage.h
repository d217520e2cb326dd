// Reads one source: takes a packet from the pool (waiting when every packet is in flight: the
// back-pressure on the source), fills it with the next frame, applies --every, and pushes it to
// the source's preprocess queue under the source's policy.
#pragma once

#include "runtime/run_context.h"

namespace sd {

class ReadStage {
 public:
  ReadStage(RunContext& run, int source) : run_(run), s_(source) {}
  void run();

 private:
  RunContext& run_;
  int s_;
};

}  // namespace sd

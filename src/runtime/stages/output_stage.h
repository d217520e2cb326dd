// Writes one source's results: restores source order (workers finish out of order), draws the
// detections (and the tracks' trails) when a sink wants them drawn, writes the frame's results to every sink in turn, and
// then tells the source the frame is done (a Redis entry is acknowledged only now).
#pragma once

#include "runtime/run_context.h"
#include "track/track_trails.h"

namespace sd {

class OutputStage {
 public:
  OutputStage(RunContext& run, int source) : run_(run), s_(source) {}
  void run();

 private:
  Status write(FramePacket& p, StageRecorder& rec);
  RunContext& run_;
  int s_;
  track::TrackTrails trails_;  // with --track: where the source's tracks have been, for drawing
};

}  // namespace sd

// Where the tracker sits in the run: one ByteTracker per source that --track covers, fed by the
// source's output thread after the frames are back in source order (runtime/stages/output_stage),
// with the frames' capture timestamps.
#pragma once

#include <memory>

#include "core/detection.h"
#include "runtime/run_options.h"
#include "sources/source.h"
#include "track/byte_tracker.h"

namespace sd {

// Whether --track (as resolved for this kind of source) tracks it, and with which tracker.
bool tracks_source(TrackMode mode, SourceKind kind);
// nullptr when the source is not tracked. Its time unit is the source's frame interval (30 fps
// when the source does not say).
std::unique_ptr<track::ByteTracker> make_tracker(const RunOptions& options, const SourceInfo& source);

// The confidence the decoder keeps when some source is tracked: ByteTrack's second round needs
// the detections between its low threshold and --conf (a partly hidden object), which are then
// left out of the outputs by `track_frame` / `keep_confident`.
float decode_threshold(float conf, const track::TrackerOptions& tracker, bool any_tracked);

// Gives each detection its track id, then keeps those at --conf or above.
void track_frame(track::ByteTracker& tracker, Detections& detections, double timestamp_ms, float conf);
// Keeps the detections at `conf` or above (an untracked source when another is tracked).
void keep_confident(Detections& detections, float conf);

}  // namespace sd

// Where the tracker sits in the run: one ByteTracker per source that --track covers, fed by the
// source's output thread after the frames are back in source order (runtime/stages/output_stage),
// with the frames' capture timestamps.
#pragma once

#include <memory>

#include "core/detection.h"
#include "core/frame.h"
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

// Gives each detection its track id, then keeps those at --conf or above. With the tracker's
// appearance cue on, each detection's colour descriptor is read from `frame` first (BGR or
// I420, at whatever scale it was decoded; no conversion of the whole frame).
void track_frame(track::ByteTracker& tracker, Detections& detections, const Frame& frame, float conf);

// The descriptors of the detections' boxes in `frame` (boxes in the frame's original size); those
// under min_score get none (the tracker uses the confident ones' only).
std::vector<track::Appearance> describe_detections(const Detections& detections, const Frame& frame, float min_score = 0);
// Keeps the detections at `conf` or above (an untracked source when another is tracked).
void keep_confident(Detections& detections, float conf);

}  // namespace sd

// Sinks receive processed frames: annotated video, JSON Lines detections, a Redis stream, ...
// The pipeline holds a list of them, opened by one factory (sinks/sink_factory.h) from what the
// user named (a path or a URI), and writes every frame's results to each in turn.
#pragma once

#include <array>
#include <string>

#include "analytics/counting.h"
#include "core/detection.h"
#include "core/error.h"
#include "core/frame.h"
#include "track/track_trails.h"

namespace sd {

class PlaceCounter;

struct StageTiming {
  const char* stage = "";
  double ms = 0;
};

struct FrameResult {
  Frame frame;             // the original frame; drawn on first when a sink wants_drawn_frame()
  // When the frame was drawn on and a sink wants_undrawn_frame(): a copy of its BGR pixels from
  // before the drawing (empty otherwise: `frame` is as decoded).
  cv::Mat undrawn;
  Detections detections;   // original-frame pixels (frame.original_size when it was decoded smaller)
  std::array<StageTiming, 4> timings{};  // read, preprocess, inference (its share of the batch), postprocess
  std::vector<CountEvent> events;  // lines crossed, zones entered and left in this frame (--line, --zone)
  const PlaceCounter* counter = nullptr;  // the source's lines and zones with their counts, for a sink that draws its own copy
  // The source's track trails up to this frame with --track (nullptr: not tracked); owned by the
  // source's output thread, which calls write(): valid during write() only.
  const track::TrackTrails* trails = nullptr;
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual std::string name() const = 0;
  // Whether write() wants the frame with the detections drawn on it (an annotated video).
  virtual bool wants_drawn_frame() const { return false; }
  // Whether write() wants the frame as decoded even when another sink wants it drawn: the frame
  // is then copied before drawing (FrameResult::undrawn); no cost when nothing is drawn.
  virtual bool wants_undrawn_frame() const { return false; }
  // Called once, after every check that can refuse the run has passed (sources, model, every
  // other output, the --serve port) and before the first frame: an output written in place
  // creates or truncates its file here, so a run refused at start leaves an existing file as it was.
  virtual Status start() { return ok(); }
  // Writes one frame's results. Called by one thread per source, so for different sources at the
  // same time (each source's frames in order): a sink shared by sources guards its own state.
  // When write() returns, the results are out of the process (a file's kernel buffer, Redis):
  // the frame's source may then acknowledge it.
  virtual Status write(const FrameResult& result) = 0;
  // Flushes and closes; called once, also on Ctrl-C and on errors, so partial output is kept.
  virtual Status finish() = 0;
};

}  // namespace sd

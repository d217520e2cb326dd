// A source of synthetic scenes (src/synthetic), for demos, tests and benchmarks without footage:
//   synth:[key=value[,key=value...]]   e.g.  synth:w=1280,h=720,frames=600,fps=30,live=1
// Keys: w, h (frame size, default 320x192), frames (default 300; 0 = endless), fps (default 30),
// seed (default 1), objects (default 6), live (0/1, default 0).
// live=0 behaves like a video file (as fast as it is read, lossless, ordered); live=1 is a
// camera: frames are produced on the fps clock whether or not anyone reads them, so a slow
// reader misses frames (counted as the source's own skips in Frame::index gaps), exactly what
// the live frame policies (--policy latest/drop-oldest, --max-age) are for.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "sources/source.h"
#include "synthetic/scene.h"

namespace sd {

struct SyntheticSourceSpec {
  synth::SceneOptions scene;
  bool live = false;
};

bool is_synthetic_spec(const std::string& spec);
Result<SyntheticSourceSpec> parse_synthetic_spec(const std::string& spec);

class SyntheticSource : public Source {
 public:
  static Result<std::unique_ptr<Source>> open(const std::string& spec, const SourceOptions& options);
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;

 private:
  SyntheticSource(const SyntheticSourceSpec& spec, const std::string& uri, int source_id);

  SyntheticSourceSpec spec_;
  synth::SyntheticScene scene_;
  SourceInfo info_;
  int source_id_ = 0;
  int64_t next_index_ = 0;
  Clock::time_point start_{};
  std::vector<synth::TruthBox> truth_;  // scratch; the truth is not part of a Frame
};

}  // namespace sd

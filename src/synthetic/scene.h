// Deterministic synthetic scenes for tests: a few visually distinct shape classes moving over a
// textured background, overlapping each other and leaving the frame partly, with exact ground
// truth. A scene is a pure function of its options: frame i can be rendered alone, in any order,
// and gives the same pixels on every machine (integer geometry, own PRNG, OpenCV LINE_8 fills).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "core/detection.h"
#include "synthetic/prng.h"

namespace sd::synth {

// How the objects move.
enum class Motion {
  // Each object bounces inside a box for ever (some boxes reach past the frame's edges): every
  // object is there from the first frame to the last. The detection clips.
  kBounce,
  // Tracking clips: each object enters at one edge at its own time, crosses the frame on a straight
  // line (left-right or top-bottom, either way) and leaves at the opposite edge; some stop on the way
  // for one to three seconds. Paths cross, and objects pass behind one another (drawing order).
  // num_objects counts the objects of the whole clip; their entries are spread over it.
  kTraverse,
};

struct SceneOptions {
  int width = 320, height = 192;
  int frames = 60;     // clip length (used by write_synthetic_clip; render() takes any index)
  double fps = 30.0;
  uint64_t seed = 1;
  int num_objects = 6;
  Motion motion = Motion::kBounce;
  // kTraverse: percent of the objects that stop once on their way.
  int stop_percent = 30;
  // Clip writing: keep frames 0, n, 2n, ... of the scene (1: all). The video is written at fps / n
  // so that a reader's timestamps are the scene's true times; the truth numbers the kept frames
  // 0, 1, 2, ... as a reader does and gives each its true timestamp (index * n / fps).
  int keep_every = 1;
};

// "bounce" / "traverse" <-> Motion; false for an unknown name.
bool parse_motion(const std::string& name, Motion& motion);

// The class names, indexed by class id: "disc", "square", "triangle", "cross".
const std::vector<std::string>& class_names();
inline constexpr int kNumClasses = 4;

// Objects less visible than this (hidden by others or outside the frame) are marked ignore.
inline constexpr float kIgnoreBelowVisibleFraction = 0.5f;
// ... and so are objects whose visible box is narrower or lower than this many pixels.
inline constexpr int kIgnoreBelowSidePixels = 8;

struct TruthBox {
  // Tight box of the object's visible pixels (so clipped to the frame), in frame pixels with
  // x2/y2 exclusive; score is 1 and class_id is set.
  Detection box;
  int object_id = 0;              // stable across the frames of a scene
  float visible_fraction = 1.f;   // visible pixels / pixels of the whole, unoccluded shape
  // Mostly hidden or tiny: an evaluation should neither reward nor penalise a detection of it.
  bool ignore = false;
};

class SyntheticScene {
 public:
  explicit SyntheticScene(const SceneOptions& options);

  const SceneOptions& options() const { return options_; }

  // Renders frame `index` (>= 0) into `bgr` (CV_8UC3, width x height, reallocated if needed) and
  // replaces `truth` with the boxes of the objects that have at least one visible pixel.
  void render(int index, cv::Mat& bgr, std::vector<TruthBox>& truth) const;

 private:
  struct Object {
    int class_id = 0;
    // kTraverse: the centre moves from (sx, sy) by (vx, vy) per frame from frame `enter`, pausing
    // for stop_frames frames after stop_at frames of moving (stop_frames 0: never stops).
    int64_t sx = 0, sy = 0;
    int enter = 0, stop_at = 0, stop_frames = 0;
    int base_w = 0, base_h = 0;          // size in pixels before pulsation
    int64_t x0 = 0, y0 = 0;              // centre at frame 0, 1/256 pixel
    int64_t vx = 0, vy = 0;              // velocity, 1/256 pixel per frame
    int64_t lo_x = 0, hi_x = 0, lo_y = 0, hi_y = 0;  // range the centre bounces in, 1/256 pixel
    int pulse_percent = 0, pulse_period = 1, pulse_phase = 0;
    cv::Vec3b colour, colour2;           // BGR fill and pattern colours
    int pattern = 0;                     // per-object pattern parameter (stripe width, ...)
  };

  void plan_traverse(Object& o, SplitMix64& rng) const;
  void centre_at(const Object& o, int index, int64_t& cx, int64_t& cy) const;
  void render_object(const Object& o, int index, int label, cv::Mat& bgr, cv::Mat& labels,
                     int& full_area) const;

  SceneOptions options_;
  cv::Mat background_;
  std::vector<Object> objects_;  // in drawing order: later objects cover earlier ones
};

}  // namespace sd::synth

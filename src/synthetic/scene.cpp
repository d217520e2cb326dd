#include "synthetic/scene.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <opencv2/imgproc.hpp>

#include "synthetic/background.h"
#include "synthetic/prng.h"

namespace sd::synth {
namespace {

constexpr int64_t kFixed = 256;  // positions and velocities are in 1/256 pixel

enum ClassId { kDisc = 0, kSquare = 1, kTriangle = 2, kCross = 3 };

// Saturated base colours (BGR), far from the grey-ish background and from each other.
const cv::Vec3b kBaseColour[kNumClasses] = {
    {50, 50, 210},   // disc: red
    {205, 95, 40},   // square: blue
    {60, 190, 70},   // triangle: green
    {40, 210, 230},  // cross: yellow
};

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Position at time t of a point starting at p0 with velocity v that bounces between lo and hi,
// in closed form so any frame can be rendered without the ones before it.
int64_t bounce(int64_t p0, int64_t v, int64_t t, int64_t lo, int64_t hi) {
  const int64_t span = hi - lo;
  if (span <= 0) return lo;
  const int64_t period = 2 * span;
  int64_t u = (p0 - lo + v * t) % period;
  if (u < 0) u += period;
  return lo + (u <= span ? u : period - u);
}

uint8_t lerp_u8(int a, int b, int t256) { return static_cast<uint8_t>(a + (b - a) * t256 / 256); }

cv::Vec3b lerp(const cv::Vec3b& a, const cv::Vec3b& b, int t256) {
  t256 = std::clamp(t256, 0, 256);
  return {lerp_u8(a[0], b[0], t256), lerp_u8(a[1], b[1], t256), lerp_u8(a[2], b[2], t256)};
}

cv::Vec3b jitter(const cv::Vec3b& c, SplitMix64& rng, int amount) {
  cv::Vec3b out;
  for (int i = 0; i < 3; ++i) out[i] = static_cast<uint8_t>(std::clamp<int64_t>(c[i] + rng.uniform(-amount, amount), 0, 255));
  return out;
}

// Fills `mask` (h x w, zeroed) with the shape of `class_id` at full size, 255 inside.
void draw_shape(int class_id, cv::Mat& mask) {
  const int w = mask.cols, h = mask.rows;
  switch (class_id) {
    case kDisc:
      cv::ellipse(mask, cv::Point(w / 2, h / 2), cv::Size((w - 1) / 2, (h - 1) / 2), 0, 0, 360,
                  cv::Scalar(255), cv::FILLED, cv::LINE_8);
      break;
    case kSquare:
      mask.setTo(cv::Scalar(255));
      break;
    case kTriangle: {
      const cv::Point pts[3] = {{0, h - 1}, {w - 1, h - 1}, {w / 2, 0}};
      cv::fillConvexPoly(mask, pts, 3, cv::Scalar(255), cv::LINE_8);
      break;
    }
    default: {  // cross: a horizontal and a vertical bar, each a third of the size thick
      const int bw = std::max(1, w / 3), bh = std::max(1, h / 3);
      cv::rectangle(mask, cv::Rect(0, (h - bh) / 2, w, bh), cv::Scalar(255), cv::FILLED);
      cv::rectangle(mask, cv::Rect((w - bw) / 2, 0, bw, h), cv::Scalar(255), cv::FILLED);
      break;
    }
  }
}

}  // namespace

bool parse_motion(const std::string& name, Motion& motion) {
  if (name == "bounce") motion = Motion::kBounce;
  else if (name == "traverse") motion = Motion::kTraverse;
  else return false;
  return true;
}

const std::vector<std::string>& class_names() {
  static const std::vector<std::string> names = {"disc", "square", "triangle", "cross"};
  return names;
}

SyntheticScene::SyntheticScene(const SceneOptions& options) : options_(options) {
  const int W = std::max(1, options.width), H = std::max(1, options.height);
  options_.width = W;
  options_.height = H;
  background_ = make_background(W, H, options.seed);

  SplitMix64 rng(hash64(options.seed, 0x0B7EC7));
  const int S = std::min(W, H);  // object sizes and speeds scale with the frame
  objects_.resize(static_cast<size_t>(std::max(0, options.num_objects)));
  for (Object& o : objects_) {
    o.class_id = static_cast<int>(rng.uniform(0, kNumClasses - 1));
    const int side = std::max(10, static_cast<int>(S * rng.uniform(12, 30) / 100));
    const int aspect = static_cast<int>(o.class_id == kDisc ? rng.uniform(85, 115) : rng.uniform(75, 130));
    o.base_h = side;
    o.base_w = std::max(10, side * aspect / 100);

    // Most objects stay in the frame; some wander far enough out to be mostly invisible.
    const bool wanders_out = rng.chance(40);
    auto range = [&](int frame_side, int obj_side, int64_t& lo, int64_t& hi) {
      if (wanders_out) {
        const int64_t out = obj_side * rng.uniform(10, 40) / 100;  // centre this far outside
        lo = -out * kFixed;
        hi = (frame_side + out) * kFixed;
      } else {
        lo = (obj_side / 2) * kFixed;
        hi = std::max<int64_t>(lo, (frame_side - obj_side / 2) * kFixed);
      }
    };
    range(W, o.base_w, o.lo_x, o.hi_x);
    range(H, o.base_h, o.lo_y, o.hi_y);
    o.x0 = rng.uniform(o.lo_x, o.hi_x);
    o.y0 = rng.uniform(o.lo_y, o.hi_y);
    // Speeds of 0.4% to 1.4% of the frame's short side per frame, in each axis.
    o.vx = S * kFixed * rng.uniform(4, 14) / 1000 * (rng.chance(50) ? 1 : -1);
    o.vy = S * kFixed * rng.uniform(2, 10) / 1000 * (rng.chance(50) ? 1 : -1);

    o.pulse_percent = static_cast<int>(rng.uniform(0, 15));
    o.pulse_period = static_cast<int>(rng.uniform(40, 120));
    o.pulse_phase = static_cast<int>(rng.uniform(0, o.pulse_period - 1));

    o.colour = jitter(kBaseColour[o.class_id], rng, 30);
    // The pattern colour: a darker or lighter shade of the fill.
    const cv::Vec3b shade = rng.chance(50) ? cv::Vec3b(20, 20, 20) : cv::Vec3b(245, 245, 245);
    o.colour2 = lerp(o.colour, shade, static_cast<int>(rng.uniform(90, 150)));
    o.pattern = static_cast<int>(rng.uniform(3, 6));
  }
  // Paths from a stream of their own, so that the bounce scenes keep their pixels.
  if (options_.motion == Motion::kTraverse) {
    SplitMix64 path_rng(hash64(options.seed, 0x7EA5E));
    for (Object& o : objects_) plan_traverse(o, path_rng);
  }
}

void SyntheticScene::plan_traverse(Object& o, SplitMix64& rng) const {
  const int fps = std::max(1, static_cast<int>(options_.fps + 0.5));
  const int duration = static_cast<int>(rng.uniform(2 * fps, 5 * fps));  // frames spent moving
  const bool vertical = rng.chance(30);
  const bool reverse = rng.chance(50);
  const int along_frame = vertical ? options_.height : options_.width;
  const int cross_frame = vertical ? options_.width : options_.height;
  const int along_side = vertical ? o.base_h : o.base_w;
  const int cross_side = vertical ? o.base_w : o.base_h;
  // Start and end just outside the frame, even at the largest pulsation (+15%).
  const int64_t margin = along_side * 60 / 100 + 2;
  int64_t a0 = -margin * kFixed, a1 = (along_frame + margin) * kFixed;
  if (reverse) std::swap(a0, a1);
  const int64_t c_lo = (cross_side / 2) * kFixed;
  const int64_t c_hi = std::max<int64_t>(c_lo, (cross_frame - cross_side / 2) * kFixed);
  const int64_t c0 = rng.uniform(c_lo, c_hi), c1 = rng.uniform(c_lo, c_hi);
  const int64_t va = (a1 - a0) / duration, vc = (c1 - c0) / duration;
  o.sx = vertical ? c0 : a0;
  o.sy = vertical ? a0 : c0;
  o.vx = vertical ? vc : va;
  o.vy = vertical ? va : vc;
  // Entries spread over the clip, a third of a crossing early so that the first frame has objects.
  o.enter = static_cast<int>(rng.uniform(-duration / 3, std::max(0, options_.frames - duration / 3)));
  if (rng.chance(options_.stop_percent)) {
    o.stop_at = static_cast<int>(rng.uniform(duration / 4, 3 * duration / 4));
    o.stop_frames = static_cast<int>(rng.uniform(fps, 3 * fps));
  }
}

void SyntheticScene::centre_at(const Object& o, int index, int64_t& cx, int64_t& cy) const {
  if (options_.motion == Motion::kBounce) {
    cx = bounce(o.x0, o.vx, index, o.lo_x, o.hi_x);
    cy = bounce(o.y0, o.vy, index, o.lo_y, o.hi_y);
    return;
  }
  // Before its entry the object is further out than its start, after its exit beyond its end:
  // outside the frame either way.
  const int64_t t = static_cast<int64_t>(index) - o.enter;
  int64_t moved = t;
  if (o.stop_frames > 0 && t > o.stop_at) moved = t < o.stop_at + o.stop_frames ? o.stop_at : t - o.stop_frames;
  cx = o.sx + o.vx * moved;
  cy = o.sy + o.vy * moved;
}

void SyntheticScene::render_object(const Object& o, int index, int label, cv::Mat& bgr, cv::Mat& labels,
                                   int& full_area) const {
  // Size pulsation: a triangle wave of +-pulse_percent around the base size.
  const int64_t period = o.pulse_period;
  const int64_t tri = std::llabs(2 * ((index + o.pulse_phase) % period) - period);  // [0, period]
  const int64_t size_scale = 100 * period + o.pulse_percent * (2 * tri - period);   // x 100 * period
  const int w = std::max<int>(4, static_cast<int>(o.base_w * size_scale / (100 * period)));
  const int h = std::max<int>(4, static_cast<int>(o.base_h * size_scale / (100 * period)));

  int64_t cx = 0, cy = 0;
  centre_at(o, index, cx, cy);
  const int left = static_cast<int>(floor_div(cx - w * kFixed / 2, kFixed));
  const int top = static_cast<int>(floor_div(cy - h * kFixed / 2, kFixed));
  full_area = 1;
  // Wholly outside (a traversing object before its entry or after its exit): nothing to draw.
  if (left >= bgr.cols || top >= bgr.rows || left + w <= 0 || top + h <= 0) return;

  cv::Mat mask = cv::Mat::zeros(h, w, CV_8U);
  draw_shape(o.class_id, mask);
  full_area = cv::countNonZero(mask);

  for (int v = 0; v < h; ++v) {
    const int y = top + v;
    if (y < 0 || y >= bgr.rows) continue;
    const uint8_t* m = mask.ptr<uint8_t>(v);
    auto* row = bgr.ptr<cv::Vec3b>(y);
    auto* lab = labels.ptr<uint16_t>(y);
    for (int u = 0; u < w; ++u) {
      const int x = left + u;
      if (!m[u] || x < 0 || x >= bgr.cols) continue;
      cv::Vec3b c = o.colour;
      switch (o.class_id) {
        case kDisc: {  // darker towards the rim
          const int64_t dx = 2 * u - (w - 1), dy = 2 * v - (h - 1);
          const int64_t num = dx * dx * h * h + dy * dy * w * w;
          const int64_t den = static_cast<int64_t>(w) * w * h * h;
          c = lerp(o.colour, o.colour2, static_cast<int>(num * 200 / den));
          break;
        }
        case kSquare:  // diagonal stripes
          if (((u + v) / o.pattern) % 2) c = o.colour2;
          break;
        case kTriangle:  // vertical gradient
          c = lerp(o.colour2, o.colour, v * 256 / h);
          break;
        default:  // cross: a contrasting centre
          if (std::abs(2 * u - w) < w / 3 && std::abs(2 * v - h) < h / 3) c = o.colour2;
          break;
      }
      row[x] = c;
      lab[x] = static_cast<uint16_t>(label);
    }
  }
}

void SyntheticScene::render(int index, cv::Mat& bgr, std::vector<TruthBox>& truth) const {
  background_.copyTo(bgr);
  cv::Mat labels = cv::Mat::zeros(bgr.rows, bgr.cols, CV_16U);
  std::vector<int> full_area(objects_.size(), 0);
  for (size_t k = 0; k < objects_.size(); ++k)
    render_object(objects_[k], index, static_cast<int>(k) + 1, bgr, labels, full_area[k]);
  add_frame_noise(bgr, options_.seed, index);

  // Visible extent and pixel count of each object, from the label map.
  struct Extent {
    int x1 = INT32_MAX, y1 = INT32_MAX, x2 = -1, y2 = -1, count = 0;
  };
  std::vector<Extent> ext(objects_.size());
  for (int y = 0; y < labels.rows; ++y) {
    const uint16_t* lab = labels.ptr<uint16_t>(y);
    for (int x = 0; x < labels.cols; ++x) {
      if (!lab[x]) continue;
      Extent& e = ext[lab[x] - 1];
      e.x1 = std::min(e.x1, x);
      e.y1 = std::min(e.y1, y);
      e.x2 = std::max(e.x2, x);
      e.y2 = std::max(e.y2, y);
      ++e.count;
    }
  }

  truth.clear();
  for (size_t k = 0; k < objects_.size(); ++k) {
    const Extent& e = ext[k];
    if (e.count == 0) continue;
    TruthBox t;
    t.object_id = static_cast<int>(k);
    t.box.x1 = static_cast<float>(e.x1);
    t.box.y1 = static_cast<float>(e.y1);
    t.box.x2 = static_cast<float>(e.x2 + 1);
    t.box.y2 = static_cast<float>(e.y2 + 1);
    t.box.score = 1.f;
    t.box.class_id = objects_[k].class_id;
    t.visible_fraction = static_cast<float>(e.count) / static_cast<float>(std::max(1, full_area[k]));
    t.ignore = t.visible_fraction < kIgnoreBelowVisibleFraction || (e.x2 + 1 - e.x1) < kIgnoreBelowSidePixels ||
               (e.y2 + 1 - e.y1) < kIgnoreBelowSidePixels;
    truth.push_back(t);
  }
}

}  // namespace sd::synth

#include "track/appearance.h"

#include <algorithm>
#include <cmath>

namespace sd::track {
namespace {

constexpr int kHueSectors = 8;
constexpr int kGreyLevels = 8;
constexpr int kColourBins = kHueSectors * 2 * 2;
static_assert(kColourBins + kGreyLevels == kAppearanceBins);
constexpr int kGrid = 12;             // at most kGrid x kGrid samples a box
constexpr float kInnerMargin = 0.15f;  // of the box's side left out on each edge (background)

struct Bgr {
  int b, g, r;
};

Bgr pixel(const PixelView& p, int x, int y) {
  if (p.format == PixelView::Format::kBgr) {
    const uint8_t* q = p.data + static_cast<size_t>(y) * p.stride + static_cast<size_t>(x) * 3;
    return {q[0], q[1], q[2]};
  }
  // I420, BT.601 limited range (what OpenCV's COLOR_YUV2BGR_I420 and the letterbox use).
  const size_t w = static_cast<size_t>(p.width), h = static_cast<size_t>(p.height);
  const int luma = p.data[static_cast<size_t>(y) * w + static_cast<size_t>(x)];
  const size_t chroma = static_cast<size_t>(y / 2) * (w / 2) + static_cast<size_t>(x / 2);
  const int u = p.data[w * h + chroma] - 128, v = p.data[w * h + (w / 2) * (h / 2) + chroma] - 128;
  // Fixed point, 8 fractional bits: 1.164 = 298/256, 2.017 = 516/256, 0.392 = 100/256,
  // 0.813 = 208/256, 1.596 = 409/256.
  const int c = 298 * (luma - 16) + 128;
  auto clamp = [](int f) { return std::clamp(f >> 8, 0, 255); };
  return {clamp(c + 516 * u), clamp(c - 100 * u - 208 * v), clamp(c + 409 * v)};
}

// Adds one pixel to the histogram (weights summing to 1).
void add(std::array<float, kAppearanceBins>& h, Bgr c) {
  const int hi = std::max({c.b, c.g, c.r}), lo = std::min({c.b, c.g, c.r});
  const int delta = hi - lo;
  if (hi < 40 || delta * 5 < hi || delta < 20) {
    // Grey (or too dark for its hue to mean anything): by brightness, shared between two levels.
    const float pos = static_cast<float>(hi) * (kGreyLevels - 1) / 255.f;
    const int k = std::min(static_cast<int>(pos), kGreyLevels - 2);
    const float f = pos - static_cast<float>(k);
    h[kColourBins + k] += 1 - f;
    h[kColourBins + k + 1] += f;
    return;
  }
  float hue;  // 0..6
  const float d = static_cast<float>(delta);
  if (hi == c.r) hue = static_cast<float>(c.g - c.b) / d;
  else if (hi == c.g) hue = 2 + static_cast<float>(c.b - c.r) / d;
  else hue = 4 + static_cast<float>(c.r - c.g) / d;
  if (hue < 0) hue += 6;
  const int sat = delta * 100 >= hi * 55 ? 1 : 0;
  const int bright = hi >= 150 ? 1 : 0;
  // Sector centres at (k + 0.5) x 360 / 8 degrees; a hue shares itself between the two nearest.
  float pos = hue * kHueSectors / 6.f - 0.5f;
  if (pos < 0) pos += kHueSectors;
  const int k0 = static_cast<int>(pos) % kHueSectors, k1 = (k0 + 1) % kHueSectors;
  const float f = pos - std::floor(pos);
  h[(k0 * 2 + sat) * 2 + bright] += 1 - f;
  h[(k1 * 2 + sat) * 2 + bright] += f;
}

}  // namespace

Appearance describe_box(const PixelView& picture, const Detection& box, float sx, float sy) {
  Appearance out;
  if (!picture.data || picture.width <= 0 || picture.height <= 0) return out;
  const float x1 = box.x1 * sx, x2 = box.x2 * sx, y1 = box.y1 * sy, y2 = box.y2 * sy;
  const float mx = (x2 - x1) * kInnerMargin, my = (y2 - y1) * kInnerMargin;
  const float left = std::max(0.f, x1 + mx), right = std::min(static_cast<float>(picture.width), x2 - mx);
  const float top = std::max(0.f, y1 + my), bottom = std::min(static_cast<float>(picture.height), y2 - my);
  if (!(right > left && bottom > top)) return out;
  // Samples at the centres of a grid of cells over the inner part: one per pixel for small boxes.
  const int nx = std::clamp(static_cast<int>(right - left), 1, kGrid);
  const int ny = std::clamp(static_cast<int>(bottom - top), 1, kGrid);
  const float step_x = (right - left) / static_cast<float>(nx), step_y = (bottom - top) / static_cast<float>(ny);
  std::array<float, kAppearanceBins> h{};
  for (int j = 0; j < ny; ++j) {
    const int y = std::min(picture.height - 1, static_cast<int>(top + (static_cast<float>(j) + 0.5f) * step_y));
    for (int i = 0; i < nx; ++i) {
      const int x = std::min(picture.width - 1, static_cast<int>(left + (static_cast<float>(i) + 0.5f) * step_x));
      add(h, pixel(picture, x, y));
    }
  }
  const float total = static_cast<float>(nx * ny);
  for (int k = 0; k < kAppearanceBins; ++k) out.v[static_cast<size_t>(k)] = std::sqrt(h[static_cast<size_t>(k)] / total);
  out.valid = true;
  return out;
}

float appearance_distance(const Appearance& a, const Appearance& b) {
  if (!a.valid || !b.valid) return 0;
  // Four partial sums: a vector's lanes (a float sum in one order would not be vectorised).
  static_assert(kAppearanceBins % 4 == 0);
  float part[4] = {0, 0, 0, 0};
  for (size_t k = 0; k < static_cast<size_t>(kAppearanceBins); k += 4)
    for (size_t j = 0; j < 4; ++j) part[j] += a.v[k + j] * b.v[k + j];
  return std::clamp(1 - ((part[0] + part[1]) + (part[2] + part[3])), 0.f, 1.f);
}

void blend_appearance(Appearance& track, const Appearance& seen, float keep) {
  if (!seen.valid) return;
  if (!track.valid) {
    track = seen;
    return;
  }
  float norm = 0;
  for (int k = 0; k < kAppearanceBins; ++k) {
    float& t = track.v[static_cast<size_t>(k)];
    t = keep * t + (1 - keep) * seen.v[static_cast<size_t>(k)];
    norm += t * t;
  }
  norm = std::sqrt(norm);
  if (norm > 0)
    for (float& t : track.v) t /= norm;
}

}  // namespace sd::track

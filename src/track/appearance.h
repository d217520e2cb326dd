// What a tracked object looks like: a small colour descriptor of a detection's pixels, for the
// tracker's appearance cue (BoT-SORT and DeepSORT keep one per track; they use a re-identification
// network, this is a colour histogram: no model, about a microsecond a box).
//
// The descriptor is a histogram of the box's inner part (the central 70% in each axis, where the
// object is rather than the background around it), sampled on a grid of at most 12 x 12 pixels,
// in HSV: 8 hue sectors (a pixel shares itself between the two nearest, so that a hue near a
// sector's edge does not flip it) x 2 saturations x 2 brightnesses for the coloured pixels, and 8
// brightness levels for the grey ones (saturation or brightness too low for a hue to mean
// anything). Stored as the square roots of the bin shares (a unit vector), so that
// 1 - dot(a, b) is one minus the Bhattacharyya coefficient of the two histograms: 0 for the same
// colours, 1 for none in common.
//
// What it tells apart: objects of different colours, or of the same colour but darker or lighter
// (a dark and a light coat). What it does not: two objects of alike colours; it is a cue for the
// tracker to break ties that the boxes leave open, not an identity.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/detection.h"

namespace sd::track {

inline constexpr int kAppearanceBins = 40;

struct Appearance {
  std::array<float, kAppearanceBins> v{};  // unit vector (square roots of the bin shares)
  bool valid = false;                       // false: nothing sampled (a box outside the picture)
};

// A picture as the descriptor reads it, without OpenCV in this header.
struct PixelView {
  enum class Format { kBgr, kI420 };
  Format format = Format::kBgr;
  const uint8_t* data = nullptr;  // BGR: rows of 3 x width bytes; I420: the Y plane, then U, V (width / 2 x height / 2)
  int width = 0, height = 0;
  size_t stride = 0;              // bytes from one row to the next (BGR; I420 is contiguous: width)
};

// The descriptor of `box` (in the picture's pixels, scaled by sx, sy first: boxes reported in
// another size than the picture's). Invalid when the box has no pixel inside the picture.
Appearance describe_box(const PixelView& picture, const Detection& box, float sx = 1, float sy = 1);

// 1 - Bhattacharyya coefficient: 0 alike, 1 nothing in common. 0 when either is invalid (no
// evidence either way).
float appearance_distance(const Appearance& a, const Appearance& b);

// A track's descriptor after seeing `seen`: the moving average track = normalise(keep x track +
// (1 - keep) x seen) (BoT-SORT's 0.9), or `seen` when the track had none.
void blend_appearance(Appearance& track, const Appearance& seen, float keep = 0.9f);

}  // namespace sd::track

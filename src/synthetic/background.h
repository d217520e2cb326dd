// The textured background of a synthetic scene: a low-saturation tint modulated by three octaves
// of integer value noise, so detectors cannot find objects by looking for a flat colour.
#pragma once

#include <cstdint>

#include <opencv2/core/mat.hpp>

namespace sd::synth {

// BGR, CV_8UC3, width x height; a pure function of its arguments.
cv::Mat make_background(int width, int height, uint64_t seed);

// Adds small per-pixel noise (+-2) that changes from frame to frame, as a camera sensor would.
void add_frame_noise(cv::Mat& bgr, uint64_t seed, int frame_index);

}  // namespace sd::synth

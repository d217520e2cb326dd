#include "synthetic/background.h"

#include <algorithm>

#include "synthetic/prng.h"

namespace sd::synth {
namespace {

// Lattice value in [-128, 127] at grid point (gx, gy) of one octave and channel.
int lattice(uint64_t seed, int octave, int channel, int gx, int gy) {
  uint64_t h = hash64(seed, static_cast<uint64_t>(octave * 4 + channel),
                      (static_cast<uint64_t>(static_cast<uint32_t>(gx)) << 32) | static_cast<uint32_t>(gy));
  return static_cast<int>(h & 0xFF) - 128;
}

// Bilinear value noise with cells of `cell` pixels, in [-128, 127]; integer arithmetic only.
int value_noise(uint64_t seed, int octave, int channel, int x, int y, int cell) {
  int gx = x / cell, gy = y / cell;
  int fx = x % cell, fy = y % cell;
  int r00 = lattice(seed, octave, channel, gx, gy), r10 = lattice(seed, octave, channel, gx + 1, gy);
  int r01 = lattice(seed, octave, channel, gx, gy + 1), r11 = lattice(seed, octave, channel, gx + 1, gy + 1);
  int top = r00 * (cell - fx) + r10 * fx;
  int bottom = r01 * (cell - fx) + r11 * fx;
  return (top * (cell - fy) + bottom * fy) / (cell * cell);
}

uint8_t clamp_u8(int v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }

}  // namespace

cv::Mat make_background(int width, int height, uint64_t seed) {
  SplitMix64 rng(hash64(seed, 0xBAC6));
  const int grey = static_cast<int>(rng.uniform(85, 160));
  int tint[3];
  for (int& t : tint) t = grey + static_cast<int>(rng.uniform(-18, 18));
  // Coarse blotches, medium texture and fine speckle; amplitudes in grey levels.
  const int coarse_cell = static_cast<int>(rng.uniform(40, 72));
  const int medium_cell = static_cast<int>(rng.uniform(10, 18));
  const int coarse_amp = static_cast<int>(rng.uniform(30, 50));
  const int medium_amp = static_cast<int>(rng.uniform(14, 26));
  const int fine_amp = static_cast<int>(rng.uniform(6, 12));

  cv::Mat bgr(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    auto* row = bgr.ptr<cv::Vec3b>(y);
    for (int x = 0; x < width; ++x) {
      // Coarse and medium octaves are shared by the channels (luminance texture); the fine
      // one is per channel (a little colour speckle).
      int lum = value_noise(seed, 0, 0, x, y, coarse_cell) * coarse_amp / 128 +
                value_noise(seed, 1, 0, x, y, medium_cell) * medium_amp / 128;
      for (int c = 0; c < 3; ++c) {
        int fine = value_noise(seed, 2, c, x, y, 3) * fine_amp / 128;
        row[x][c] = clamp_u8(tint[c] + lum + fine);
      }
    }
  }
  return bgr;
}

void add_frame_noise(cv::Mat& bgr, uint64_t seed, int frame_index) {
  const uint64_t frame_key = hash64(seed, 0x401CE, static_cast<uint64_t>(frame_index));
  for (int y = 0; y < bgr.rows; ++y) {
    auto* row = bgr.ptr<uint8_t>(y);
    const int n = bgr.cols * 3;
    for (int i = 0; i < n; i += 8) {
      // One hash gives the noise of 8 consecutive bytes (3 bits each is plenty).
      uint64_t h = hash64(frame_key, static_cast<uint64_t>(y), static_cast<uint64_t>(i));
      for (int k = 0; k < 8 && i + k < n; ++k) {
        int noise = static_cast<int>((h >> (k * 8)) % 5) - 2;
        row[i + k] = clamp_u8(row[i + k] + noise);
      }
    }
  }
}

}  // namespace sd::synth

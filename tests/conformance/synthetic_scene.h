// A synthetic picture for whole-model parity (the GPU check, tests/fp16_test.cpp): the bundled
// detector was trained on streamdet_synth's scenes and finds the objects in it, so that fp16's
// detections can be compared with float32's rather than the noise of a random input.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/native/host_tensor.h"

namespace sd::native::conformance {

// A picture the bundled detector (trained on streamdet_synth's scenes) finds objects in, so that
// the fp16 run's detections can be compared with float32's: a grey textured background and
// filled discs and squares in saturated colours, per image of the batch, deterministic. Values
// in [0, 1], NCHW; other models get the same picture (any image-like input does for parity).
inline void fill_scene(HostTensor& x) {
  const Shape& s = x.shape();
  if (s.rank != 4 || s[1] != 3) {  // not an image: uniform noise
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
    return;
  }
  const int64_t h = s[2], w = s[3];
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> noise(-0.06f, 0.06f);
  struct Shape2 { float cx, cy, r; bool disc; float rgb[3]; };
  const Shape2 shapes[] = {{0.25f, 0.3f, 0.09f, true, {0.9f, 0.15f, 0.1f}}, {0.7f, 0.28f, 0.08f, false, {0.1f, 0.8f, 0.2f}},
                           {0.3f, 0.72f, 0.07f, false, {0.15f, 0.2f, 0.9f}}, {0.72f, 0.7f, 0.1f, true, {0.95f, 0.85f, 0.1f}}};
  float* p = x.as<float>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx) {
        float rgb[3] = {0.45f, 0.45f, 0.45f};
        const float t = noise(rng);
        for (float& c : rgb) c += t;
        const float fy = (static_cast<float>(y) + 0.5f) / static_cast<float>(h), fx = (static_cast<float>(xx) + 0.5f) / static_cast<float>(w);
        for (const Shape2& sh : shapes) {
          const float dx = fx - sh.cx, dy = fy - sh.cy;
          const bool inside = sh.disc ? dx * dx + dy * dy <= sh.r * sh.r : std::fabs(dx) <= sh.r && std::fabs(dy) <= sh.r;
          if (inside) std::copy(sh.rgb, sh.rgb + 3, rgb);
        }
        for (int64_t c = 0; c < 3; ++c) p[((n * 3 + c) * h + y) * w + xx] = std::clamp(rgb[c], 0.f, 1.f);
      }
}

}  // namespace sd::native::conformance

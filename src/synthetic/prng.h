// A tiny seeded PRNG (splitmix64) with integer-only helpers, so that a synthetic scene has the
// same pixels on every machine: std:: distributions differ between standard libraries, and
// floating-point arithmetic can differ with FMA contraction, so the generator avoids both.
#pragma once

#include <cstdint>

namespace sd::synth {

// One splitmix64 step: a good 64-bit mix of any input (also used as a stateless hash).
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Stateless hash of several integers (seed, frame, pixel, ...).
constexpr uint64_t hash64(uint64_t a, uint64_t b, uint64_t c = 0) {
  return mix64(mix64(mix64(a) ^ b) ^ c);
}

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(uint64_t seed) : state_(seed) {}

  constexpr uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform integer in [lo, hi] (inclusive). The modulo bias is irrelevant for test scenes.
  constexpr int64_t uniform(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }

  constexpr bool chance(int percent) { return uniform(0, 99) < percent; }

 private:
  uint64_t state_;
};

}  // namespace sd::synth

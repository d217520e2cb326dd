// Choosing among implementations of one node by timing them at load, on the node's own shape with
// the session's threads (cpu/dnnl_conv.cpp: our Winograd against oneDNN's, bf16 against float32;
// cpu/dnnl_qconv.cpp: oneDNN's int8 implementations). Every candidate computes the same node;
// the timing only picks the fastest.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "engine/native/conv_attrs.h"
#include "engine/native/host_tensor.h"

namespace sd::native::dnnl_ops {

// Candidate 0 is the incumbent (what runs without the timing).
struct TimingRule {
  // Stop before the third round once one candidate is faster than every other by this factor:
  // the kernels differ by 2-3x where they differ at all.
  double clear = 0.8;
  // Another candidate replaces the incumbent only when its best time is below this fraction of
  // the incumbent's (1: any gain): a near tie stays with what ran before the timing, so that the
  // noise of a busy machine does not flip the choice from one load to the next.
  double switch_below = 1.0;
  // And only when it was below that fraction of the incumbent's time in every round (each round
  // runs them back to back, so a burst of another process's work slows both or one round only):
  // on a machine busy enough to slow runs 10x (2 cores, several other processes' OpenMP teams),
  // single best times picked a 10x-slower-in-use kernel by chance. The rounds stop as soon as no
  // candidate has won every one so far (`clear` is then unused).
  bool win_every_round = false;
  // A winner whose best time is below this fraction of the incumbent's is taken for noise and the
  // incumbent kept (0: no such check). For candidates that cannot differ that much (the same
  // convolution by two oneDNN kernels), such a ratio means the incumbent's runs were all slowed:
  // at load average 1.7 here, with another process's threads on the 2 cores, a 0.2 ms bf16 1x1
  // convolution took 24, 24 and 9 ms in three rounds against its float32 twin's 16, 12 and 0.28.
  double implausible_below = 0.0;
};

// The rule for candidates that differ by a few percent where they differ (oneDNN's int8
// implementations, bf16 against float32): 5% in every round before leaving the incumbent, and
// never for a win of more than 2x (on runs nothing else slowed they differ by 1.8x at most).
inline constexpr TimingRule kCautiousRule{0.8, 0.95, true, 0.5};

// Runs each of `count` candidates once (warm-up: first touch of the buffers, lazy setup), then
// alternating rounds of one run each, up to three; the best time of each counts. Returns the
// index of the fastest under `rule`; 0 when count < 2 (nothing timed).
size_t fastest_candidate(size_t count, const std::function<void(size_t)>& run, TimingRule rule = {});

// The answer kept for `key` for the life of the process, else measure() (then kept): YOLO models
// repeat their layer shapes, and later sessions plan at no cost. The key names everything the
// answer depends on (shape, types, post ops, threads, ISA, which candidates).
size_t remembered_choice(const std::string& key, const std::function<size_t()>& measure);

// A buffer of `bytes` bytes (at least 64) to time candidates in: a made-up source (a fixed
// pattern of bytes, not all alike) where `made_up_source`, else left as allocated.
HostTensor timing_bytes(size_t bytes, bool made_up_source = false);

// A convolution's geometry (sizes, kernel, strides, dilations, pads, groups) and the threads it
// runs on, comma-separated: the part of remembered_choice's keys every convolution has.
std::string geometry_key(const ops::ConvGeometry& g, int64_t threads);

}  // namespace sd::native::dnnl_ops

// Decode + NMS on synthetic heads shaped and scored like real ones (single-threaded).
//
//   YOLOv8 [1, 84, 8400] at 640x640: every class score is sigmoid(N(-7, 1.2)) (background, as a
//   trained model outputs), except around 30 objects, each seen by ~12 anchors with scores
//   0.3..0.95 and jittered boxes: ~360 candidates at conf 0.25 that NMS reduces to ~30.
//   SSD300 [1, 4, 8732] + [1, 81, 8732] (NVIDIA layout, raw offsets + logits): background logit
//   ~N(6, 1), classes ~N(-3, 1); 30 objects, each matched by the 8 priors overlapping it most
//   (background 3..4, class 3..7, offsets pointing at the object): ~200 candidates at conf 0.25. Also the decoded-probability form
//   [1, 8732, 4] + [1, 8732, 81] of the same scores.
//
// Run: ./build/bench/streamdet_bench --benchmark_filter='Yolo|Ssd|Nms'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "postprocess/nms.h"
#include "postprocess/postprocessor.h"
#include "postprocess/ssd_decoder.h"
#include "postprocess/yolov8_decoder.h"

namespace sd {
namespace {

constexpr int kClasses = 80, kAnchors = 8400, kObjects = 30;

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// The 8400 anchors of a 640x640 YOLOv8 head: 80x80, 40x40, 20x20 cell centres with their stride.
struct AnchorGrid {
  std::vector<float> cx, cy, stride;
  AnchorGrid() {
    for (int s : {8, 16, 32})
      for (int y = 0; y < 640 / s; ++y)
        for (int x = 0; x < 640 / s; ++x) cx.push_back((x + 0.5f) * s), cy.push_back((y + 0.5f) * s), stride.push_back(float(s));
  }
};

Tensor yolov8_head() {
  std::mt19937 rng(2024);
  std::normal_distribution<float> background(-7.f, 1.2f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  AnchorGrid grid;
  Tensor t(Shape{1, 4 + kClasses, kAnchors});
  float* d = t.data();
  auto at = [&](int k, int a) -> float& { return d[static_cast<int64_t>(k) * kAnchors + a]; };
  for (int a = 0; a < kAnchors; ++a) {
    at(0, a) = grid.cx[static_cast<size_t>(a)], at(1, a) = grid.cy[static_cast<size_t>(a)];
    at(2, a) = at(3, a) = 2.f * grid.stride[static_cast<size_t>(a)];
    for (int c = 0; c < kClasses; ++c) at(4 + c, a) = sigmoid(background(rng));
  }
  for (int o = 0; o < kObjects; ++o) {
    const float ox = 40 + u(rng) * 560, oy = 40 + u(rng) * 560, ow = 30 + u(rng) * 200, oh = 30 + u(rng) * 200;
    const int cls = static_cast<int>(u(rng) * kClasses);
    // The ~12 anchors nearest the object centre on the 80x80 and 40x40 levels see it.
    int seen = 0;
    for (int a = 0; a < kAnchors && seen < 12; ++a) {
      const float dx = std::abs(grid.cx[static_cast<size_t>(a)] - ox), dy = std::abs(grid.cy[static_cast<size_t>(a)] - oy);
      if (dx > 1.6f * grid.stride[static_cast<size_t>(a)] || dy > 1.6f * grid.stride[static_cast<size_t>(a)]) continue;
      at(0, a) = ox + (u(rng) - 0.5f) * 0.1f * ow, at(1, a) = oy + (u(rng) - 0.5f) * 0.1f * oh;
      at(2, a) = ow * (0.9f + 0.2f * u(rng)), at(3, a) = oh * (0.9f + 0.2f * u(rng));
      at(4 + cls, a) = 0.3f + 0.65f * u(rng);
      if (u(rng) < 0.3f) at(4 + (cls + 1) % kClasses, a) = 0.1f + 0.3f * u(rng);  // a runner-up class
      ++seen;
    }
  }
  return t;
}

struct SsdHeads {
  Tensor boxes, scores;
};

// NVIDIA SSD300 layout (channel-first) with logits, or anchor-major with decoded corners and
// probabilities; both hold the same boxes and scores.
SsdHeads ssd_heads(bool raw) {
  std::mt19937 rng(77);
  std::normal_distribution<float> bg(6.f, 1.f), fg(-3.f, 1.f), offset(0.f, 0.3f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  constexpr int A = kSsd300Priors, C = 81;
  const std::vector<float> priors = ssd300_coco_priors(SsdPriorOrder::kSizeMajor);
  std::vector<float> logits(static_cast<size_t>(A) * C), offsets(static_cast<size_t>(A) * 4);
  for (int a = 0; a < A; ++a) {
    for (int c = 0; c < C; ++c) logits[static_cast<size_t>(a) * C + c] = c == 0 ? bg(rng) : fg(rng);
    for (int k = 0; k < 4; ++k) offsets[static_cast<size_t>(a) * 4 + k] = offset(rng);
  }
  // Each object is seen by the 8 priors that overlap its box most (SSD's matching), whose
  // offsets point at the box with a little jitter.
  for (int o = 0; o < kObjects; ++o) {
    const float ow = 0.1f + 0.4f * u(rng), oh = 0.1f + 0.4f * u(rng);
    const float ox = ow / 2 + u(rng) * (1 - ow), oy = oh / 2 + u(rng) * (1 - oh);
    const Detection obox{ox - ow / 2, oy - oh / 2, ox + ow / 2, oy + oh / 2, 0, 0};
    std::vector<std::pair<float, int>> overlap;
    for (int a = 0; a < A; ++a) {
      const float* p = priors.data() + 4 * a;
      overlap.push_back({-iou(obox, {p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2, 0, 0}), a});
    }
    std::partial_sort(overlap.begin(), overlap.begin() + 8, overlap.end());
    const int cls = 1 + static_cast<int>(u(rng) * (C - 1));
    for (int k = 0; k < 8; ++k) {
      const int a = overlap[static_cast<size_t>(k)].second;
      const float* p = priors.data() + 4 * a;
      float* t = offsets.data() + 4 * a;
      t[0] = (ox + 0.02f * (u(rng) - 0.5f) - p[0]) / (0.1f * p[2]);
      t[1] = (oy + 0.02f * (u(rng) - 0.5f) - p[1]) / (0.1f * p[3]);
      t[2] = std::log(ow * (0.95f + 0.1f * u(rng)) / p[2]) / 0.2f;
      t[3] = std::log(oh * (0.95f + 0.1f * u(rng)) / p[3]) / 0.2f;
      logits[static_cast<size_t>(a) * C] = 3.f + u(rng);
      logits[static_cast<size_t>(a) * C + cls] = 3.f + 4.f * u(rng);
    }
  }
  SsdHeads h{Tensor(raw ? Shape{1, 4, A} : Shape{1, A, 4}), Tensor(raw ? Shape{1, C, A} : Shape{1, A, C})};
  for (int a = 0; a < A; ++a) {
    float m = -INFINITY, s = 0;
    for (int c = 0; c < C; ++c) m = std::max(m, logits[static_cast<size_t>(a) * C + c]);
    for (int c = 0; c < C; ++c) s += std::exp(logits[static_cast<size_t>(a) * C + c] - m);
    for (int c = 0; c < C; ++c) {
      const float l = logits[static_cast<size_t>(a) * C + c];
      if (raw) h.scores.data()[static_cast<int64_t>(c) * A + a] = l;
      else h.scores.data()[static_cast<int64_t>(a) * C + c] = std::exp(l - m) / s;
    }
    const float* p = priors.data() + 4 * a;
    const float* t = offsets.data() + 4 * a;
    if (raw) {
      for (int k = 0; k < 4; ++k) h.boxes.data()[static_cast<int64_t>(k) * A + a] = t[k];
    } else {  // the same box, decoded to normalised corners
      const float cx = 0.1f * t[0] * p[2] + p[0], cy = 0.1f * t[1] * p[3] + p[1];
      const float w = std::exp(0.2f * t[2]) * p[2], hh = std::exp(0.2f * t[3]) * p[3];
      float* b = h.boxes.data() + static_cast<int64_t>(a) * 4;
      b[0] = cx - w / 2, b[1] = cy - hh / 2, b[2] = cx + w / 2, b[3] = cy + hh / 2;
    }
  }
  return h;
}

const DecodeOptions kYoloDecode{0.25f, 640, 640};
const NmsOptions kNms{0.45f, false, 300};

void BM_YoloV8_DecodeNms(benchmark::State& state) {
  Tensor head = yolov8_head();
  TensorView views[] = {head.view()};
  Postprocessor post(std::make_unique<YoloV8Decoder>(YoloV8Head{0, kClasses, false}), kYoloDecode, kNms);
  Detections out;
  for (auto _ : state) {
    post.run(views, 0, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["kept"] = static_cast<double>(out.size());
}
BENCHMARK(BM_YoloV8_DecodeNms)->Unit(benchmark::kMicrosecond);

void BM_YoloV8_Decode(benchmark::State& state) {
  Tensor head = yolov8_head();
  TensorView views[] = {head.view()};
  YoloV8Decoder dec({0, kClasses, false});
  const bool plain = state.range(0) == 1;
  Detections out;
  for (auto _ : state) {
    out.clear();
    if (plain) dec.decode_plain(views, 0, kYoloDecode, out);
    else dec.decode(views, 0, kYoloDecode, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(plain ? "plain per-anchor loop" : "blocked column scan");
  state.counters["candidates"] = static_cast<double>(out.size());
}
BENCHMARK(BM_YoloV8_Decode)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// NMS alone on the YOLOv8 candidates (arg 0: fast, 1: nms_reference).
void BM_YoloV8_Nms(benchmark::State& state) {
  Tensor head = yolov8_head();
  TensorView views[] = {head.view()};
  Detections candidates;
  YoloV8Decoder({0, kClasses, false}).decode(views, 0, kYoloDecode, candidates);
  const bool reference = state.range(0) == 1;
  Nms nms;
  Detections work;
  work.reserve(candidates.size());
  for (auto _ : state) {
    if (reference) {
      Detections kept = nms_reference(candidates, kNms);
      benchmark::DoNotOptimize(kept.data());
    } else {
      work.assign(candidates.begin(), candidates.end());
      nms.run(work, kNms);
      benchmark::DoNotOptimize(work.data());
    }
  }
  state.SetLabel(reference ? "nms_reference" : "Nms");
  state.counters["candidates"] = static_cast<double>(candidates.size());
}
BENCHMARK(BM_YoloV8_Nms)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// A crowded frame: n random clustered candidates over 80 classes (arg 1: reference).
void BM_Nms_Crowded(benchmark::State& state) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const int n = static_cast<int>(state.range(0));
  Detections candidates;
  for (int i = 0; i < n; ++i) {
    const int object = static_cast<int>(u(rng) * n / 10);  // ~10 candidates per object
    std::mt19937 orng(static_cast<uint32_t>(object));
    std::uniform_real_distribution<float> ou(0.f, 1.f);
    const float x = ou(orng) * 1200, y = ou(orng) * 700, w = 20 + ou(orng) * 100, h = 20 + ou(orng) * 100;
    const int cls = static_cast<int>(ou(orng) * 80);
    const float j = 0.1f * w;
    candidates.push_back({x + (u(rng) - .5f) * j, y + (u(rng) - .5f) * j, x + w + (u(rng) - .5f) * j,
                          y + h + (u(rng) - .5f) * j, u(rng), cls});
  }
  const bool reference = state.range(1) == 1;
  Nms nms;
  Detections work;
  work.reserve(candidates.size());
  for (auto _ : state) {
    if (reference) {
      Detections kept = nms_reference(candidates, kNms);
      benchmark::DoNotOptimize(kept.data());
    } else {
      work.assign(candidates.begin(), candidates.end());
      nms.run(work, kNms);
      benchmark::DoNotOptimize(work.data());
    }
  }
  state.SetLabel(reference ? "nms_reference" : "Nms");
}
BENCHMARK(BM_Nms_Crowded)->Args({1000, 0})->Args({1000, 1})->Args({5000, 0})->Args({5000, 1})->Unit(benchmark::kMicrosecond);

// SSD300 decode + NMS (arg 0: raw offsets + logits, NVIDIA layout; 1: decoded probabilities);
// arg 1: 1 for the plain decoder + nms_reference.
void BM_Ssd_DecodeNms(benchmark::State& state) {
  const bool raw = state.range(0) == 0, plain = state.range(1) == 1;
  SsdHeads h = ssd_heads(raw);
  TensorView views[] = {h.boxes.view(), h.scores.view()};
  SsdHead head;
  head.boxes_channel_first = head.scores_channel_first = raw;
  head.num_anchors = kSsd300Priors;
  head.num_scores = 81;
  head.input_width = head.input_height = 300;
  if (raw) {
    head.boxes = SsdBoxEncoding::kPriorOffsets;
    head.scores = SsdScoreKind::kLogits;
    head.priors = ssd300_coco_priors(SsdPriorOrder::kSizeMajor);
  }
  const DecodeOptions decode{0.25f, 300, 300};
  auto dec = std::make_unique<SsdDecoder>(head);
  const SsdDecoder& ssd = *dec;
  Postprocessor post(std::move(dec), decode, kNms);
  Detections out, candidates;
  ssd.decode(views, 0, decode, candidates);
  state.counters["candidates"] = static_cast<double>(candidates.size());
  for (auto _ : state) {
    if (plain) {
      candidates.clear();
      ssd.decode_plain(views, 0, decode, candidates);
      out = nms_reference(candidates, kNms);
    } else {
      post.run(views, 0, out);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(raw ? "raw offsets + logits [1,4,8732] [1,81,8732]" : "probabilities [1,8732,4] [1,8732,81]") +
                 (plain ? ", plain decode + nms_reference" : ""));
  state.counters["kept"] = static_cast<double>(out.size());
}
BENCHMARK(BM_Ssd_DecodeNms)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sd

#include "postprocess/nms.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace sd {
namespace {

// Maps a float to an unsigned key with the same order (negative floats flipped entirely,
// positive ones get the sign bit set). -0 is folded into +0 so equal scores tie.
uint32_t ordered_bits(float f) {
  if (f == 0.f) f = 0.f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// True when the candidate box overlaps (IoU > threshold) one of the `n` kept boxes of its class.
// The arithmetic is sd::iou(kept, candidate) term for term (same operands, same order), so the
// decision is bit-identical to the reference; the loop has no early exit so it vectorises, and
// the caller scans the kept list in chunks to stop early.
bool overlaps_kept(const float* x1, const float* y1, const float* x2, const float* y2, const float* area,
                   const int* cls, int n, const Detection& d, float d_area, int d_cls, float threshold) {
  int hit = 0;
  for (int i = 0; i < n; ++i) {
    float ix1 = x1[i] > d.x1 ? x1[i] : d.x1;
    float iy1 = y1[i] > d.y1 ? y1[i] : d.y1;
    float ix2 = x2[i] < d.x2 ? x2[i] : d.x2;
    float iy2 = y2[i] < d.y2 ? y2[i] : d.y2;
    float iw = ix2 - ix1, ih = iy2 - iy1;
    float inter = iw * ih;
    float uni = area[i] + d_area - inter;
    float ratio = inter / uni;  // computed in every lane; only used where the box really overlaps
    float v = (iw > 0.f && ih > 0.f && uni > 0.f) ? ratio : 0.f;
    hit |= (cls[i] == d_cls) & (v > threshold);
  }
  return hit != 0;
}

}  // namespace

void Nms::run(Detections& dets, const NmsOptions& options) {
  const size_t n = dets.size();
  if (n == 0) return;
  order_.resize(n);
  for (size_t i = 0; i < n; ++i)
    order_[i] = (static_cast<uint64_t>(~ordered_bits(dets[i].score)) << 32) | static_cast<uint32_t>(i);
  // One sort of plain integers: descending score, then ascending index (deterministic ties).
  std::sort(order_.begin(), order_.end());

  const size_t limit = options.max_det > 0 ? std::min(n, static_cast<size_t>(options.max_det)) : n;
  for (auto* v : {&kx1_, &ky1_, &kx2_, &ky2_, &karea_})
    if (v->size() < limit) v->resize(limit);
  if (kclass_.size() < limit) kclass_.resize(limit);
  kept_.clear();
  kept_.reserve(limit);

  constexpr int kChunk = 64;  // kept boxes tested per vectorised pass before checking for a hit
  int kept = 0;
  for (size_t k = 0; k < n && static_cast<size_t>(kept) < limit; ++k) {
    const Detection& d = dets[static_cast<uint32_t>(order_[k])];
    const float d_area = box_area(d);
    const int d_cls = options.agnostic ? 0 : d.class_id;
    bool suppressed = false;
    for (int s = 0; s < kept && !suppressed; s += kChunk) {
      int m = std::min(kChunk, kept - s);
      suppressed = overlaps_kept(kx1_.data() + s, ky1_.data() + s, kx2_.data() + s, ky2_.data() + s,
                                 karea_.data() + s, kclass_.data() + s, m, d, d_area, d_cls, options.iou_threshold);
    }
    if (suppressed) continue;
    kx1_[kept] = d.x1, ky1_[kept] = d.y1, kx2_[kept] = d.x2, ky2_[kept] = d.y2;
    karea_[kept] = d_area, kclass_[kept] = d_cls;
    ++kept;
    kept_.push_back(d);
  }
  dets.assign(kept_.begin(), kept_.end());  // fits in dets' capacity: kept_.size() <= n
}

Detections nms_reference(const Detections& candidates, const NmsOptions& options) {
  const size_t n = candidates.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return candidates[a].score > candidates[b].score; });

  std::vector<bool> removed(n, false);
  Detections kept;
  for (size_t i = 0; i < n; ++i) {
    if (removed[i]) continue;
    if (options.max_det > 0 && kept.size() == static_cast<size_t>(options.max_det)) break;
    const Detection& a = candidates[order[i]];
    kept.push_back(a);
    for (size_t j = i + 1; j < n; ++j) {
      const Detection& b = candidates[order[j]];
      bool same_class = options.agnostic || a.class_id == b.class_id;
      if (!removed[j] && same_class && iou(a, b) > options.iou_threshold) removed[j] = true;
    }
  }
  return kept;
}

}  // namespace sd

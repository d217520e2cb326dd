#include "postprocess/ssd_decoder.h"

#include <algorithm>
#include <cmath>

#include "postprocess/decoder_util.h"
#include "postprocess/score_scan.h"

namespace sd {

// Pointers to one image's boxes and scores, with the strides of their two layouts.
struct SsdDecoder::Views {
  const float* boxes = nullptr;   // element (k, a) at boxes[k * box_k + a * box_a]
  int64_t box_k = 0, box_a = 0;
  const float* scores = nullptr;  // element (c, a) at scores[c * score_c + a * score_a]
  int64_t score_c = 0, score_a = 0;
  int64_t anchors = 0;
  int classes = 0;
  float width = 0, height = 0;
  float score(int c, int64_t a) const { return scores[c * score_c + a * score_a]; }
};

bool SsdDecoder::views(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                       Views& v) const {
  const TensorView* b = detail::batch_view(outputs, head_.boxes_output, 3, batch_index);
  const TensorView* s = detail::batch_view(outputs, head_.scores_output, 3, batch_index);
  if (!b || !s) return false;
  const int64_t A = head_.num_anchors, C = head_.num_scores;
  const Shape want_b = head_.boxes_channel_first ? Shape{b->shape[0], 4, A} : Shape{b->shape[0], A, 4};
  const Shape want_s = head_.scores_channel_first ? Shape{s->shape[0], C, A} : Shape{s->shape[0], A, C};
  if (b->shape != want_b || s->shape != want_s || C < 2) return false;
  if (head_.boxes == SsdBoxEncoding::kPriorOffsets && static_cast<int64_t>(head_.priors.size()) != 4 * A) return false;
  v.boxes = b->data + batch_index * 4 * A;
  v.box_k = head_.boxes_channel_first ? A : 1;
  v.box_a = head_.boxes_channel_first ? 1 : 4;
  v.scores = s->data + batch_index * C * A;
  v.score_c = head_.scores_channel_first ? A : 1;
  v.score_a = head_.scores_channel_first ? 1 : C;
  v.anchors = A;
  v.classes = static_cast<int>(C);
  v.width = static_cast<float>(options.input_width > 0 ? options.input_width : head_.input_width);
  v.height = static_cast<float>(options.input_height > 0 ? options.input_height : head_.input_height);
  return true;
}

Detection SsdDecoder::box(const Views& v, int64_t a) const {
  const float* p = v.boxes + a * v.box_a;
  const float t0 = p[0], t1 = p[v.box_k], t2 = p[2 * v.box_k], t3 = p[3 * v.box_k];
  if (head_.boxes == SsdBoxEncoding::kCorners) return Detection{t0 * v.width, t1 * v.height, t2 * v.width, t3 * v.height, 0, 0};
  const float* prior = head_.priors.data() + 4 * a;
  const float cx = (head_.variance_xy * t0) * prior[2] + prior[0];
  const float cy = (head_.variance_xy * t1) * prior[3] + prior[1];
  const float w = std::exp(head_.variance_wh * t2) * prior[2];
  const float h = std::exp(head_.variance_wh * t3) * prior[3];
  return Detection{(cx - 0.5f * w) * v.width, (cy - 0.5f * h) * v.height, (cx + 0.5f * w) * v.width,
                   (cy + 0.5f * h) * v.height, 0, 0};
}

namespace {

constexpr int kBlock = 512;

// Appends the classes of anchor `a` (scores already known to possibly pass) to `out`.
template <class Views, class BoxFn>
void emit_anchor(const Views& v, int64_t a, SsdScoreKind kind, float best_fg, float conf, BoxFn&& box_of,
                 Detections& out) {
  Detection box{};
  bool have_box = false;
  auto emit = [&](int c, float p) {
    if (!have_box) box = box_of(a), have_box = true;
    Detection d = box;
    d.score = p;
    d.class_id = c - 1;
    out.push_back(d);
  };
  if (kind == SsdScoreKind::kProbabilities) {
    for (int c = 1; c < v.classes; ++c) {
      float p = v.score(c, a);
      if (p >= conf) emit(c, p);
    }
    return;
  }
  const float bg = v.score(0, a);
  const float m = bg > best_fg ? bg : best_fg;
  float sum = 0.f;
  for (int c = 0; c < v.classes; ++c) sum += std::exp(v.score(c, a) - m);
  // exp(x - m) / sum <= exp(x - m): below this floor, p < conf.
  const float floor = conf > 0.f ? std::log(conf) - 1e-3f : -INFINITY;
  for (int c = 1; c < v.classes; ++c) {
    const float x = v.score(c, a) - m;
    if (!(x >= floor)) continue;
    const float p = std::exp(x) / sum;
    if (p >= conf) emit(c, p);
  }
}

}  // namespace

void SsdDecoder::decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                        Detections& out) const {
  Views v;
  if (!views(outputs, batch_index, options, v)) return;
  const float conf = options.conf_threshold;
  const bool logits = head_.scores == SsdScoreKind::kLogits;
  const float log_conf = conf > 0.f ? std::log(conf) - 1e-3f : -INFINITY;
  auto box_of = [&](int64_t a) { return box(v, a); };
  // Whether the best non-background score of an anchor can reach the threshold.
  auto may_pass = [&](int64_t a, float best_fg) {
    if (!logits) return best_fg >= conf;
    const float bg = v.score(0, a);
    return best_fg >= bg || best_fg - bg >= log_conf;  // best_fg - max(bg, best_fg) >= log(conf)
  };
  if (head_.scores_channel_first) {
    float best[kBlock];
    for (int64_t a0 = 0; a0 < v.anchors; a0 += kBlock) {
      const int n = static_cast<int>(std::min<int64_t>(kBlock, v.anchors - a0));
      scan::column_max(v.scores + v.score_c + a0, v.score_c, v.classes - 1, n, best);
      for (int j = 0; j < n; ++j)
        if (may_pass(a0 + j, best[j])) emit_anchor(v, a0 + j, head_.scores, best[j], conf, box_of, out);
    }
  } else {
    for (int64_t a = 0; a < v.anchors; ++a) {
      const float* row = v.scores + a * v.score_a;
      if (!logits) {
        if (scan::row_any_at_least(row + 1, v.classes - 1, conf)) emit_anchor(v, a, head_.scores, 0.f, conf, box_of, out);
        continue;
      }
      const float best_fg = scan::row_max(row + 1, v.classes - 1);
      if (may_pass(a, best_fg)) emit_anchor(v, a, head_.scores, best_fg, conf, box_of, out);
    }
  }
}

void SsdDecoder::decode_plain(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                              Detections& out) const {
  Views v;
  if (!views(outputs, batch_index, options, v)) return;
  const float conf = options.conf_threshold;
  for (int64_t a = 0; a < v.anchors; ++a) {
    float m = 0, sum = 0;
    if (head_.scores == SsdScoreKind::kLogits) {
      m = v.score(0, a);
      for (int c = 1; c < v.classes; ++c) m = std::max(m, v.score(c, a));
      for (int c = 0; c < v.classes; ++c) sum += std::exp(v.score(c, a) - m);
    }
    for (int c = 1; c < v.classes; ++c) {
      const float p = head_.scores == SsdScoreKind::kLogits ? std::exp(v.score(c, a) - m) / sum : v.score(c, a);
      if (!(p >= conf)) continue;
      Detection d = box(v, a);
      d.score = p;
      d.class_id = c - 1;
      out.push_back(d);
    }
  }
}

}  // namespace sd

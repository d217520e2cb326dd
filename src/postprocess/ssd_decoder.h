// SSD heads: two outputs, boxes [N, A, 4] (or [N, 4, A]) and class scores [N, A, C] (or
// [N, C, A]) with the background as class 0. Candidates are per (anchor, class): every
// non-background class whose probability reaches the threshold, as SSD's own post-processing
// does; class ids are reported without the background (class_id = c - 1).
//
// Two encodings:
//  - decoded: boxes are x1, y1, x2, y2 normalised to [0, 1], scores are probabilities
//    (e.g. qfgaohao/pytorch-ssd exports);
//  - raw: boxes are offsets against the SSD300 default boxes with variances 0.1 / 0.2
//    (cx = pcx + 0.1 * tx * pw, w = pw * exp(0.2 * tw)) and scores are logits, softmaxed over the
//    classes (NVIDIA DeepLearningExamples SSD300, 8732 anchors).
// make_decoder picks raw when A == 8732, decoded otherwise; ONNX metadata can force it (see decoder.h).
// Raw decoding knows only the SSD300 COCO default boxes (scales 21..315); models trained with other
// priors (e.g. ssd.pytorch's VOC scales 30..315) need an export with decoded boxes.
//
// Raw scores are not softmaxed for every anchor: softmax(x)_c <= exp(x_c - max x), so an anchor whose
// best non-background logit is more than -log(conf) below its largest logit cannot reach conf and is
// skipped after one max scan. Only the survivors pay for the exponentials.
#pragma once

#include <utility>
#include <vector>

#include "postprocess/decoder.h"
#include "postprocess/ssd_priors.h"

namespace sd {

enum class SsdBoxEncoding { kCorners, kPriorOffsets };
enum class SsdScoreKind { kProbabilities, kLogits };

struct SsdHead {
  int boxes_output = 0, scores_output = 1;
  bool boxes_channel_first = false;   // [N, 4, A]
  bool scores_channel_first = false;  // [N, C, A]
  int num_anchors = 0;
  int num_scores = 0;  // C, background included
  SsdBoxEncoding boxes = SsdBoxEncoding::kCorners;
  SsdScoreKind scores = SsdScoreKind::kProbabilities;
  std::vector<float> priors;  // kPriorOffsets: cx, cy, w, h per anchor, normalised
  float variance_xy = 0.1f, variance_wh = 0.2f;
  int input_width = 0, input_height = 0;  // used when DecodeOptions leaves them 0
};

class SsdDecoder final : public Decoder {
 public:
  explicit SsdDecoder(SsdHead head) : head_(std::move(head)) {}
  Layout layout() const override { return Layout::kSsd; }
  int num_classes() const override { return head_.num_scores - 1; }
  void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
              Detections& out) const override;
  // Every anchor, every class, full softmax: the tests' oracle.
  void decode_plain(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                    Detections& out) const;
  const SsdHead& head() const { return head_; }

 private:
  struct Views;
  bool views(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options, Views& v) const;
  Detection box(const Views& v, int64_t anchor) const;
  SsdHead head_;
};

}  // namespace sd

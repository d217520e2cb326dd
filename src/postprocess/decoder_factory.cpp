// make_decoder: recognises the head family from the output shapes and the model's metadata (the
// rules are listed in decoder.h), or checks that a forced --layout fits the shapes.
#include <algorithm>
#include <numeric>
#include <string>

#include "postprocess/darknet_decoder.h"
#include "postprocess/decoder.h"
#include "postprocess/end2end_decoder.h"
#include "postprocess/ssd_decoder.h"
#include "postprocess/yolov5_decoder.h"
#include "postprocess/yolov8_decoder.h"
#include "postprocess/yolox_decoder.h"

namespace sd {
namespace {

using DecoderPtr = std::unique_ptr<Decoder>;

constexpr const char* kLayoutChoices = "yolov8|yolov5|yolov10|yolox|ssd|darknet";

struct Context {
  const std::vector<TensorInfo>& outputs;
  const ModelInfo& model;
  int width, height;
  std::vector<int> strides;
  int64_t grid = -1;  // G: grid cells over all strides for this input size, -1 when unknown
  int names = 0;      // class names in the metadata, 0 when absent
};

std::string describe_outputs(const std::vector<TensorInfo>& outputs) {
  std::string s;
  for (const TensorInfo& o : outputs) {
    if (!s.empty()) s += ", ";
    s += "'" + o.name + "' " + o.shape.str();
  }
  return s.empty() ? std::string("none") : s;
}

std::string model_name(const ModelInfo& m) { return m.model_path.empty() ? std::string("the model") : m.model_path; }

tl::unexpected<Error> unrecognised(const Context& ctx, const std::string& why = "") {
  return fail(ErrorCode::kModel, "cannot recognise the output layout of " + model_name(ctx.model) + " (outputs " +
                                     describe_outputs(ctx.outputs) + ")" + (why.empty() ? "" : ": " + why) +
                                     "; pass --layout " + kLayoutChoices);
}

tl::unexpected<Error> does_not_fit(const Context& ctx, Layout layout, const std::string& expected) {
  return fail(ErrorCode::kModel, "--layout " + std::string(layout_name(layout)) + " does not fit the outputs of " +
                                     model_name(ctx.model) + " (" + describe_outputs(ctx.outputs) + "): expected " +
                                     expected);
}

std::vector<int> level_strides(const ModelInfo& m) {
  if (m.strides.size() >= 2) {
    std::vector<int> s = m.strides;
    std::sort(s.begin(), s.end());
    return s;
  }
  // Ultralytics metadata carries only the largest stride: 64 means a P6 model.
  if (m.strides.size() == 1 && m.strides[0] == 64) return {8, 16, 32, 64};
  return {8, 16, 32};
}

std::string strides_text(const std::vector<int>& strides) {
  std::string s;
  for (int v : strides) s += (s.empty() ? "" : "/") + std::to_string(v);
  return s;
}

// The one rank-`rank` output: the only output, or the only one of that rank among others (old
// YOLOv5 exports add the per-level grids as rank-5 outputs beside the main one). -1 if none.
int single_output_of_rank(const std::vector<TensorInfo>& outputs, int rank) {
  int found = -1;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].shape.rank != rank) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(i);
  }
  return found;
}

const std::string* metadata(const ModelInfo& m, const std::string& key) {
  auto it = m.metadata.find(key);
  return it == m.metadata.end() ? nullptr : &it->second;
}

// ---- one builder per family: the decoder when the shapes fit, an error naming what was expected.

Result<DecoderPtr> build_yolov8(const Context& ctx, int out, bool transposed) {
  const Shape& s = ctx.outputs[static_cast<size_t>(out)].shape;
  const int64_t channels = transposed ? s[2] : s[1];
  if (channels < 5) return does_not_fit(ctx, Layout::kYoloV8, "[N, 4+nc, A] or [N, A, 4+nc] with nc >= 1");
  return DecoderPtr(new YoloV8Decoder({out, static_cast<int>(channels - 4), transposed}));
}

Result<DecoderPtr> build_yolov5(const Context& ctx, int out) {
  const Shape& s = ctx.outputs[static_cast<size_t>(out)].shape;
  if (s[2] < 6 || s[1] < s[2]) return does_not_fit(ctx, Layout::kYoloV5, "one output [N, A, 5+nc] with nc >= 1");
  return DecoderPtr(new YoloV5Decoder({out, static_cast<int>(s[2] - 5)}));
}

Result<DecoderPtr> build_yolox(const Context& ctx, int out) {
  const Shape& s = ctx.outputs[static_cast<size_t>(out)].shape;
  if (s[2] < 6 || s[1] != ctx.grid)
    return does_not_fit(ctx, Layout::kYoloX,
                        "one output [N, A, 5+nc] with A = " + std::to_string(ctx.grid) + " grid cells for a " +
                            std::to_string(ctx.width) + "x" + std::to_string(ctx.height) + " input at strides " +
                            strides_text(ctx.strides));
  YoloXHead head;
  head.output = out;
  head.num_classes = static_cast<int>(s[2] - 5);
  head.strides = ctx.strides;
  head.input_width = ctx.width;
  head.input_height = ctx.height;
  return DecoderPtr(new YoloXDecoder(std::move(head)));
}

Result<DecoderPtr> build_end2end(const Context& ctx, int out) {
  const Shape& s = ctx.outputs[static_cast<size_t>(out)].shape;
  const bool rows6 = s.rank == 3 && s[2] == 6, rows7 = s.rank == 2 && s[1] == 7;
  if (!rows6 && !rows7)
    return does_not_fit(ctx, Layout::kYoloV10,
                        "one output [N, K, 6] (x1, y1, x2, y2, score, class) or [K, 7] (batch, x1, y1, x2, y2, class, score)");
  return DecoderPtr(new End2EndDecoder({out, rows7, ctx.names}));
}

Result<DecoderPtr> build_ssd(const Context& ctx) {
  const char* expected = "two outputs, boxes [N, A, 4] or [N, 4, A] and scores [N, A, C] or [N, C, A] (C >= 2)";
  if (ctx.outputs.size() != 2) return does_not_fit(ctx, Layout::kSsd, expected);
  for (int b = 0; b < 2; ++b) {
    const Shape& bs = ctx.outputs[static_cast<size_t>(b)].shape;
    const Shape& ss = ctx.outputs[static_cast<size_t>(1 - b)].shape;
    if (bs.rank != 3 || ss.rank != 3 || bs[0] != ss[0]) continue;
    SsdHead head;
    head.boxes_output = b;
    head.scores_output = 1 - b;
    if (bs[2] == 4) {
      head.num_anchors = static_cast<int>(bs[1]);
    } else if (bs[1] == 4) {
      head.num_anchors = static_cast<int>(bs[2]);
      head.boxes_channel_first = true;
    } else {
      continue;
    }
    if (ss[1] == head.num_anchors) {
      head.num_scores = static_cast<int>(ss[2]);
    } else if (ss[2] == head.num_anchors) {
      head.num_scores = static_cast<int>(ss[1]);
      head.scores_channel_first = true;
    } else {
      continue;
    }
    if (head.num_scores < 2) continue;

    const bool ssd300 = head.num_anchors == kSsd300Priors;
    head.boxes = ssd300 ? SsdBoxEncoding::kPriorOffsets : SsdBoxEncoding::kCorners;
    head.scores = ssd300 ? SsdScoreKind::kLogits : SsdScoreKind::kProbabilities;
    SsdPriorOrder order = head.boxes_channel_first ? SsdPriorOrder::kSizeMajor : SsdPriorOrder::kPositionMajor;
    if (const std::string* v = metadata(ctx.model, "ssd_boxes"))
      head.boxes = *v == "priors" ? SsdBoxEncoding::kPriorOffsets : SsdBoxEncoding::kCorners;
    if (const std::string* v = metadata(ctx.model, "ssd_scores"))
      head.scores = *v == "logits" ? SsdScoreKind::kLogits : SsdScoreKind::kProbabilities;
    if (const std::string* v = metadata(ctx.model, "ssd_prior_order"))
      order = *v == "position_major" ? SsdPriorOrder::kPositionMajor : SsdPriorOrder::kSizeMajor;
    if (head.boxes == SsdBoxEncoding::kPriorOffsets) {
      if (!ssd300)
        return does_not_fit(ctx, Layout::kSsd,
                            "8732 anchors for raw box offsets (the SSD300 default boxes), got " +
                                std::to_string(head.num_anchors) + "; export decoded boxes instead");
      head.priors = ssd300_coco_priors(order);
    }
    head.input_width = ctx.width;
    head.input_height = ctx.height;
    return DecoderPtr(new SsdDecoder(std::move(head)));
  }
  return does_not_fit(ctx, Layout::kSsd, expected);
}

Result<DecoderPtr> build_darknet(const Context& ctx) {
  if (!ctx.model.darknet) return does_not_fit(ctx, Layout::kDarknet, "a Darknet .cfg model with [yolo] layers");
  const DarknetConfig& cfg = *ctx.model.darknet;
  const auto& layers = cfg.yolo_layers;
  if (layers.empty()) return does_not_fit(ctx, Layout::kDarknet, "[yolo] layers in the cfg, found none");
  std::vector<int> outs;
  for (size_t i = 0; i < ctx.outputs.size(); ++i)
    if (ctx.outputs[i].shape.rank == 4) outs.push_back(static_cast<int>(i));
  const int nc = layers[0].classes;
  const std::string expected = "one raw output [N, na*(5+nc), H, W] per [yolo] layer (" +
                               std::to_string(layers.size()) + " in the cfg, nc = " + std::to_string(nc) + ")";
  if (outs.size() != layers.size() || nc < 1) return does_not_fit(ctx, Layout::kDarknet, expected);

  // Coarsest grid goes with the largest anchors, whatever order the cfg and the engine list them in
  // (YOLOv3 lists the coarse layer first, YOLOv4 the fine one). Stable sorts keep the given order on ties.
  auto grid_area = [&](int o) { return ctx.outputs[static_cast<size_t>(o)].shape[2] * ctx.outputs[static_cast<size_t>(o)].shape[3]; };
  std::stable_sort(outs.begin(), outs.end(), [&](int a, int b) { return grid_area(a) < grid_area(b); });
  auto anchor_area = [&](size_t l) {
    const auto& an = layers[l].anchors;
    double sum = 0;
    for (size_t k = 0; k + 1 < an.size(); k += 2) sum += static_cast<double>(an[k]) * an[k + 1];
    return an.size() >= 2 ? sum / static_cast<double>(an.size() / 2) : 0.0;
  };
  std::vector<size_t> order(layers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return anchor_area(a) > anchor_area(b); });

  DarknetHead head;
  head.num_classes = nc;
  head.input_width = ctx.width > 0 ? ctx.width : cfg.width;
  head.input_height = ctx.height > 0 ? ctx.height : cfg.height;
  head.layers.resize(layers.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const DarknetYoloLayer& l = layers[order[k]];
    const int out = outs[k];
    const int64_t na = static_cast<int64_t>(l.anchors.size() / 2);
    if (l.classes != nc || na < 1 || ctx.outputs[static_cast<size_t>(out)].shape[1] != na * (5 + nc))
      return does_not_fit(ctx, Layout::kDarknet, expected);
    head.layers[order[k]] = DarknetHeadLayer{out, l.anchors, l.scale_x_y, l.new_coords};
  }
  return DecoderPtr(new DarknetDecoder(std::move(head)));
}

// ---- forced layouts

Result<DecoderPtr> build_forced(const Context& ctx, Layout layout) {
  switch (layout) {
    case Layout::kSsd: return build_ssd(ctx);
    case Layout::kDarknet: return build_darknet(ctx);
    case Layout::kYoloV10: {
      int out = single_output_of_rank(ctx.outputs, 3);
      if (out < 0) out = single_output_of_rank(ctx.outputs, 2);
      if (out < 0) return build_end2end(ctx, 0);
      return build_end2end(ctx, out);
    }
    default: break;
  }
  const int out = single_output_of_rank(ctx.outputs, 3);
  if (out < 0) {
    const char* expected = layout == Layout::kYoloV8 ? "one output [N, 4+nc, A]" : "one output [N, A, 5+nc]";
    return does_not_fit(ctx, layout, expected);
  }
  const Shape& s = ctx.outputs[static_cast<size_t>(out)].shape;
  switch (layout) {
    case Layout::kYoloV8: {
      // Channel-major unless the metadata names or the shape say the head is transposed.
      bool transposed = ctx.names > 0 ? (s[2] == 4 + ctx.names && s[1] != 4 + ctx.names) : s[1] > s[2];
      return build_yolov8(ctx, out, transposed);
    }
    case Layout::kYoloV5: return build_yolov5(ctx, out);
    case Layout::kYoloX: return build_yolox(ctx, out);
    default: return unrecognised(ctx);
  }
}

// ---- automatic recognition

Result<DecoderPtr> recognise(const Context& ctx) {
  if (ctx.model.darknet) return build_darknet(ctx);
  if (ctx.outputs.size() == 2) {
    auto ssd = build_ssd(ctx);
    if (ssd) return ssd;
  }
  const int out3 = single_output_of_rank(ctx.outputs, 3);
  if (out3 < 0) {
    const int out2 = single_output_of_rank(ctx.outputs, 2);
    if (out2 >= 0 && ctx.outputs[static_cast<size_t>(out2)].shape[1] == 7) return build_end2end(ctx, out2);
    return unrecognised(ctx, "no single rank-3 head");
  }
  const Shape& s = ctx.outputs[static_cast<size_t>(out3)].shape;
  const int64_t d1 = s[1], d2 = s[2], g = ctx.grid;
  const bool grid_sized = g > 0 && (d1 == g || d1 == 3 * g);

  if (ctx.names > 0) {
    const int nn = ctx.names;
    if (d1 == 4 + nn && d1 < d2) return build_yolov8(ctx, out3, false);
    if (d2 == 4 + nn && d1 > d2) return build_yolov8(ctx, out3, true);
    if (d2 == 5 + nn && d1 > d2) return d1 == g ? build_yolox(ctx, out3) : build_yolov5(ctx, out3);
    if (d2 == 6 && d1 > d2) return build_end2end(ctx, out3);
    return unrecognised(ctx, "the metadata lists " + std::to_string(nn) + " class names, which fits no known head");
  }
  if (d1 < d2 && d1 >= 5) return build_yolov8(ctx, out3, false);
  if (d2 == 6 && d1 > d2 && !grid_sized) return build_end2end(ctx, out3);
  if (d1 > d2 && d2 >= 6 && g > 0) {
    if (d1 == 3 * g) return build_yolov5(ctx, out3);
    if (d1 == g) return build_yolox(ctx, out3);
  }
  return unrecognised(ctx);
}

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(Layout requested, const std::vector<TensorInfo>& outputs,
                                              const ModelInfo& model, int input_width, int input_height) {
  Context ctx{outputs, model, input_width, input_height, level_strides(model)};
  ctx.grid = grid_cells(input_width, input_height, ctx.strides);
  ctx.names = static_cast<int>(model.class_names.size());
  for (const TensorInfo& o : outputs)
    if (!o.shape.is_static())
      return fail(ErrorCode::kModel, "cannot decode the outputs of " + model_name(model) + " (" +
                                         describe_outputs(outputs) + "): output '" + o.name +
                                         "' has no concrete shape (run a probe inference first)");
  if (outputs.empty()) return unrecognised(ctx, "the model has no outputs");
  return requested == Layout::kAuto ? recognise(ctx) : build_forced(ctx, requested);
}

}  // namespace sd

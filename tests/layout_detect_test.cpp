// make_decoder: recognising each head family from shapes and metadata, and the errors a user
// sees when it cannot or when a forced --layout does not fit.
#include "postprocess/darknet_decoder.h"
#include "postprocess/decoder.h"
#include "postprocess/ssd_decoder.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

std::vector<TensorInfo> outputs(std::initializer_list<std::pair<const char*, Shape>> list) {
  std::vector<TensorInfo> v;
  for (auto& [name, shape] : list) v.push_back({name, shape});
  return v;
}

ModelInfo onnx(std::vector<std::string> names = {}) {
  ModelInfo m;
  m.model_path = "model.onnx";
  m.class_names = std::move(names);
  return m;
}

std::vector<std::string> n_names(int n) { return std::vector<std::string>(static_cast<size_t>(n), "x"); }

std::unique_ptr<Decoder> pick(const std::vector<TensorInfo>& outs, const ModelInfo& m, int w = 640, int h = 640,
                              Layout requested = Layout::kAuto) {
  auto d = make_decoder(requested, outs, m, w, h);
  EXPECT_TRUE(d) << (d ? "" : d.error().message);
  return d ? std::move(*d) : nullptr;
}

TEST(LayoutDetect, YoloV8FromAChannelMajorHead) {
  auto d = pick(outputs({{"output0", {1, 84, 8400}}}), onnx());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->layout(), Layout::kYoloV8);
  EXPECT_EQ(d->num_classes(), 80);
  // The project's own tiny model: 3 classes, a dynamic-size input probed at 320x192.
  auto tiny = pick(outputs({{"output0", {1, 7, 1260}}}), onnx(), 320, 192);
  ASSERT_TRUE(tiny);
  EXPECT_EQ(tiny->layout(), Layout::kYoloV8);
  EXPECT_EQ(tiny->num_classes(), 3);
}

TEST(LayoutDetect, MetadataNamesSeparateTransposedYoloV8FromYoloX) {
  auto with_names = pick(outputs({{"output0", {1, 8400, 84}}}), onnx(n_names(80)));
  ASSERT_TRUE(with_names);
  EXPECT_EQ(with_names->layout(), Layout::kYoloV8);
  EXPECT_EQ(with_names->num_classes(), 80);
  // Without names, [1, 8400, 84] is a YOLOX grid head with 79 classes (documented ambiguity).
  auto without = pick(outputs({{"output", {1, 8400, 84}}}), onnx());
  ASSERT_TRUE(without);
  EXPECT_EQ(without->layout(), Layout::kYoloX);
}

TEST(LayoutDetect, YoloV5AndYoloXFromTheAnchorCount) {
  auto v5 = pick(outputs({{"output0", {1, 25200, 85}}}), onnx());
  ASSERT_TRUE(v5);
  EXPECT_EQ(v5->layout(), Layout::kYoloV5);
  EXPECT_EQ(v5->num_classes(), 80);
  auto yolox = pick(outputs({{"output", {1, 3549, 85}}}), onnx(), 416, 416);
  ASSERT_TRUE(yolox);
  EXPECT_EQ(yolox->layout(), Layout::kYoloX);
  // Ultralytics YOLOv5 with metadata, and an old export with the per-level grids as extra outputs.
  auto named = pick(outputs({{"output0", {1, 25200, 85}}}), onnx(n_names(80)));
  ASSERT_TRUE(named);
  EXPECT_EQ(named->layout(), Layout::kYoloV5);
  auto old = pick(outputs({{"output", {1, 25200, 85}}, {"345", {1, 3, 80, 80, 85}}, {"346", {1, 3, 40, 40, 85}}}), onnx());
  ASSERT_TRUE(old);
  EXPECT_EQ(old->layout(), Layout::kYoloV5);
}

TEST(LayoutDetect, EndToEndHeads) {
  auto v10 = pick(outputs({{"output0", {1, 300, 6}}}), onnx(n_names(80)));
  ASSERT_TRUE(v10);
  EXPECT_EQ(v10->layout(), Layout::kYoloV10);
  EXPECT_TRUE(v10->nms_in_model());
  EXPECT_EQ(v10->num_classes(), 80);
  auto bare = pick(outputs({{"output0", {1, 100, 6}}}), onnx());
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->layout(), Layout::kYoloV10);
  auto v7 = pick(outputs({{"output", {37, 7}}}), onnx());
  ASSERT_TRUE(v7);
  EXPECT_EQ(v7->layout(), Layout::kYoloV10);
}

TEST(LayoutDetect, SsdFromBoxesAndScores) {
  // NVIDIA SSD300: channel-first raw outputs, 8732 anchors -> priors + softmax.
  auto nvidia = pick(outputs({{"bboxes", {1, 4, 8732}}, {"scores", {1, 81, 8732}}}), onnx(), 300, 300);
  ASSERT_TRUE(nvidia);
  EXPECT_EQ(nvidia->layout(), Layout::kSsd);
  EXPECT_EQ(nvidia->num_classes(), 80);
  const auto& head = static_cast<const SsdDecoder&>(*nvidia).head();
  EXPECT_EQ(head.boxes, SsdBoxEncoding::kPriorOffsets);
  EXPECT_EQ(head.scores, SsdScoreKind::kLogits);
  EXPECT_TRUE(head.boxes_channel_first && head.scores_channel_first);
  EXPECT_EQ(head.priors, ssd300_coco_priors(SsdPriorOrder::kSizeMajor));
  // pytorch-ssd style: scores first, decoded corners and probabilities.
  auto mobilenet = pick(outputs({{"scores", {1, 3000, 21}}, {"boxes", {1, 3000, 4}}}), onnx(), 300, 300);
  ASSERT_TRUE(mobilenet);
  const auto& mh = static_cast<const SsdDecoder&>(*mobilenet).head();
  EXPECT_EQ(mh.boxes, SsdBoxEncoding::kCorners);
  EXPECT_EQ(mh.scores, SsdScoreKind::kProbabilities);
  EXPECT_EQ(mh.boxes_output, 1);
  EXPECT_EQ(mobilenet->num_classes(), 20);
  // Metadata overrides the 8732-anchor guess.
  ModelInfo decoded = onnx();
  decoded.metadata["ssd_boxes"] = "corners";
  decoded.metadata["ssd_scores"] = "probabilities";
  auto d = pick(outputs({{"boxes", {1, 8732, 4}}, {"scores", {1, 8732, 81}}}), decoded, 300, 300);
  ASSERT_TRUE(d);
  EXPECT_EQ(static_cast<const SsdDecoder&>(*d).head().boxes, SsdBoxEncoding::kCorners);
}

ModelInfo darknet_model() {
  ModelInfo m;
  m.format = ModelFormat::kDarknet;
  m.model_path = "yolo-fastest.cfg";
  DarknetConfig cfg;
  cfg.width = cfg.height = 320;
  // As Yolo-Fastest's cfg lists them: the coarse layer (big anchors) first.
  cfg.yolo_layers = {{{115, 73, 119, 199, 242, 238}, 80, 1.f, false}, {{12, 18, 37, 49, 52, 132}, 80, 1.f, false}};
  m.darknet = cfg;
  return m;
}

TEST(LayoutDetect, DarknetPairsGridsWithAnchorsWhateverTheOutputOrder) {
  auto d = pick(outputs({{"fine", {1, 255, 20, 20}}, {"coarse", {1, 255, 10, 10}}}), darknet_model(), 320, 320);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->layout(), Layout::kDarknet);
  EXPECT_EQ(d->num_classes(), 80);
  const auto& head = static_cast<const DarknetDecoder&>(*d).head();
  ASSERT_EQ(head.layers.size(), 2u);
  EXPECT_EQ(head.layers[0].output, 1);  // big anchors on the 10x10 grid
  EXPECT_EQ(head.layers[1].output, 0);
  EXPECT_EQ(head.layers[0].anchors[0], 115.f);
}

TEST(LayoutDetect, UnknownLayoutNamesEveryOutputAndSuggestsLayout) {
  // FastestDet's head [1, 85, 22, 22] is none of the known families.
  auto d = make_decoder(Layout::kAuto, outputs({{"758", {1, 85, 22, 22}}, {"aux", {1, 10}}}), onnx(), 352, 352);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ErrorCode::kModel);
  const std::string& msg = d.error().message;
  EXPECT_NE(msg.find("model.onnx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'758' [1, 85, 22, 22]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'aux' [1, 10]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--layout yolov8|yolov5|yolov10|yolox|ssd|darknet"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(LayoutDetect, NamesThatFitNoHeadAreAnError) {
  auto d = make_decoder(Layout::kAuto, outputs({{"output0", {1, 84, 8400}}}), onnx(n_names(3)), 640, 640);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("3 class names"), std::string::npos) << d.error().message;
}

TEST(LayoutDetect, ForcedLayoutsAreCheckedAgainstTheShapes) {
  auto outs = outputs({{"output0", {1, 84, 8400}}});
  auto yolox = make_decoder(Layout::kYoloX, outs, onnx(), 640, 640);
  ASSERT_FALSE(yolox);
  EXPECT_EQ(yolox.error().code, ErrorCode::kModel);
  EXPECT_NE(yolox.error().message.find("--layout yolox does not fit"), std::string::npos) << yolox.error().message;
  EXPECT_NE(yolox.error().message.find("'output0' [1, 84, 8400]"), std::string::npos);
  EXPECT_FALSE(make_decoder(Layout::kYoloV5, outs, onnx(), 640, 640));
  EXPECT_FALSE(make_decoder(Layout::kSsd, outs, onnx(), 640, 640));
  EXPECT_FALSE(make_decoder(Layout::kYoloV10, outs, onnx(), 640, 640));
  auto darknet = make_decoder(Layout::kDarknet, outs, onnx(), 640, 640);
  ASSERT_FALSE(darknet);
  EXPECT_NE(darknet.error().message.find("Darknet .cfg"), std::string::npos);
  // A forced layout that fits is taken even when auto would choose another.
  auto forced = make_decoder(Layout::kYoloV8, outputs({{"output", {1, 8400, 84}}}), onnx(), 640, 640);
  ASSERT_TRUE(forced);
  EXPECT_EQ((*forced)->layout(), Layout::kYoloV8);
  EXPECT_EQ((*forced)->num_classes(), 80);
  // Darknet outputs that do not match the cfg's [yolo] layers.
  EXPECT_FALSE(make_decoder(Layout::kAuto, outputs({{"a", {1, 255, 10, 10}}}), darknet_model(), 320, 320));
  EXPECT_FALSE(make_decoder(Layout::kAuto, outputs({{"a", {1, 24, 10, 10}}, {"b", {1, 24, 20, 20}}}), darknet_model(), 320, 320));
}

TEST(LayoutDetect, DynamicShapesAreRefused) {
  auto d = make_decoder(Layout::kAuto, outputs({{"output0", {1, 84, -1}}}), onnx(), 640, 640);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("[1, 84, ?]"), std::string::npos) << d.error().message;
}

}  // namespace
}  // namespace sd

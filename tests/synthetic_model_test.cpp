// The project's own tiny detector (models/tiny_synth_v8.onnx, made by tools/train_tiny_detector.py)
// against the synthetic generator it was trained on, through a plain OpenCV DNN reference path
// (tests/tiny_model_reference.h), independent of the pipeline's own preprocess/decode/NMS.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <opencv2/dnn.hpp>
#include <opencv2/videoio.hpp>
#include <unistd.h>

#include "eval/match.h"
#include "synthetic/clip_writer.h"
#include "synthetic/scene.h"
#include "tiny_model_reference.h"

namespace sd {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx";
const std::string kNames = std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.names";
const cv::Size kInput(256, 256);  // the model's fixed input (metadata imgsz [256, 256])

TEST(TinySyntheticModel, HasTheYoloV8HeadShape) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(kModel);
  net.setInput(cv::dnn::blobFromImage(cv::Mat(kInput, CV_8UC3, cv::Scalar(114, 114, 114)), 1.0 / 255.0));
  const cv::Mat out = net.forward();
  ASSERT_EQ(out.dims, 3);
  EXPECT_EQ(out.size[0], 1);
  EXPECT_EQ(out.size[1], 4 + synth::kNumClasses);
  EXPECT_EQ(out.size[2], 32 * 32 + 16 * 16 + 8 * 8);  // strides 8, 16, 32 at 256x256
}

TEST(TinySyntheticModel, NamesFileMatchesTheGenerator) {
  std::ifstream in(kNames);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.push_back(line);
  EXPECT_EQ(names, synth::class_names());
}

// A clip whose seed was never used for training, through the video codec (as a user's file
// would be): the detector must find the shapes with precision and recall of at least 0.9.
TEST(TinySyntheticModel, FindsTheShapesOfAFreshClip) {
  const fs::path dir = fs::temp_directory_path() / ("streamdet_tiny_model_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  synth::SceneOptions options;  // 320x192
  options.frames = 60;
  options.seed = 4242;
  options.num_objects = 8;
  const std::string video = (dir / "clip.mp4").string(), truth_path = (dir / "truth.jsonl").string();
  ASSERT_TRUE(synth::write_synthetic_clip(options, video, truth_path));

  cv::dnn::Net net = cv::dnn::readNetFromONNX(kModel);
  const synth::SyntheticScene scene(options);
  cv::VideoCapture cap(video, cv::CAP_FFMPEG);
  ASSERT_TRUE(cap.isOpened());
  cv::Mat frame, rendered;
  std::vector<synth::TruthBox> truth;
  eval::MatchCounts counts;
  int frames = 0;
  while (cap.read(frame)) {
    scene.render(frames, rendered, truth);
    std::vector<eval::GroundTruthBox> gt;
    for (const auto& t : truth) gt.push_back({t.box, t.ignore});
    counts += eval::match_frame(testing::reference_yolov8_detect(net, frame, kInput), gt);
    ++frames;
  }
  fs::remove_all(dir);
  ASSERT_EQ(frames, options.frames);
  ASSERT_GT(counts.true_positives, 200);  // the clip has ~5 findable objects per frame
  EXPECT_GE(counts.precision(), 0.9) << "TP " << counts.true_positives << " FP " << counts.false_positives;
  EXPECT_GE(counts.recall(), 0.9) << "TP " << counts.true_positives << " FN " << counts.false_negatives;
  std::printf("tiny model on seed %llu: precision %.4f recall %.4f (TP %lld FP %lld FN %lld)\n",
              static_cast<unsigned long long>(options.seed), counts.precision(), counts.recall(),
              static_cast<long long>(counts.true_positives), static_cast<long long>(counts.false_positives),
              static_cast<long long>(counts.false_negatives));
}

}  // namespace
}  // namespace sd

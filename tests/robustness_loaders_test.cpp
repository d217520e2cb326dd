// Sizes that would take the machine down are refused before anything is allocated, with one line
// naming the figure and the budget (--max-memory): a model whose fixed input is 100000x100000, a
// dynamic model asked for --input-size 100000, a working set over the budget, a Darknet net
// 100000 pixels wide, frames in flight over the budget. No uncaught exception reaches main.
#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include <onnx/onnx_pb.h>
#include <opencv2/imgcodecs.hpp>

#include "cli_util.h"
#include "onnx_builder.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace sd {
namespace {

using test::kTinyModel;

// The bundled tiny model with its input's H and W replaced: numbers, or "" for a dynamic dim.
std::string tiny_model_with_input(const test::TempDir& dir, const std::string& name, const std::string& h, const std::string& w) {
  onnx::ModelProto m;
  {
    std::ifstream in(kTinyModel, std::ios::binary);
    EXPECT_TRUE(m.ParseFromIstream(&in));
  }
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  auto set = [](onnx::TensorShapeProto_Dimension* d, const std::string& v, const char* param) {
    if (v.empty()) d->set_dim_param(param);
    else d->set_dim_value(std::stoll(v));
  };
  set(shape->mutable_dim(2), h, "height");
  set(shape->mutable_dim(3), w, "width");
  const std::string path = dir.file(name);
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

void expect_refused(const test::CliResult& r, int code, const std::vector<std::string>& mentions, const std::string& what) {
  EXPECT_EQ(r.code, code) << what << ": " << r.err;
  auto lines = test::nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << what << ": " << r.err;
  for (const auto& m : mentions) EXPECT_NE(lines[0].find(m), std::string::npos) << what << ": " << lines[0];
}

TEST(RobustnessLoaders, HugeInputSizesAreRefusedNamingTheFigure) {
  test::TempDir dir;
  const std::string src = "synth:w=64,h=64,frames=2";
  const std::string fixed = tiny_model_with_input(dir, "fixed_huge.onnx", "100000", "100000");
  expect_refused(test::run_cli(dir, {"run", "-m", fixed, "-s", src, "-q"}), exit_code::kModel,
                 {"fixed_huge.onnx at 100000x100000 needs 120 GB for one input tensor, over the memory budget of", "(--max-memory)"},
                 "fixed 100000x100000 input");

  const std::string dynamic = tiny_model_with_input(dir, "dynamic.onnx", "", "");
  expect_refused(test::run_cli(dir, {"run", "-m", dynamic, "-s", src, "-q", "--input-size", "100000"}), exit_code::kModel,
                 {"dynamic.onnx at 100000x100000 needs 120 GB"}, "--input-size 100000");

  // The input fits, the engine's working set at that size does not: a fully convolutional
  // model, 3 -> 32 channels at 4096x4096 (2.1 GB of activations).
  test::OnnxBuilder b;
  b.input("images", {1, 3, -1, -1});
  b.random_initializer("w", {32, 3, 3, 3}, -0.1f, 0.1f);
  b.node("Conv", {"images", "w"}, {"y"});
  b.output("y");
  const std::string conv = dir.file("conv.onnx");
  std::ofstream(conv, std::ios::binary) << b.bytes();
  expect_refused(test::run_cli(dir, {"run", "-m", conv, "-s", src, "-q", "--input-size", "4096", "--max-memory", "256M"}),
                 exit_code::kModel, {"conv.onnx", "need", "over the memory budget of 268 MB (--max-memory)"}, "working set");
}

TEST(RobustnessLoaders, ADarknetNetTooWideForTheBudgetIsRefused) {
  test::TempDir dir;
  std::ofstream(dir.file("wide.cfg")) << "[net]\nwidth=100000\nheight=416\nchannels=3\n\n"
                                         "[convolutional]\nfilters=16\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
                                         "[convolutional]\nfilters=18\nsize=1\nstride=1\npad=1\nactivation=linear\n\n"
                                         "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=1\nnum=3\n";
  {
    std::ofstream w(dir.file("wide.weights"), std::ios::binary);
    const int32_t header[3] = {0, 2, 0};
    const int64_t seen = 0;
    w.write(reinterpret_cast<const char*>(header), sizeof header);
    w.write(reinterpret_cast<const char*>(&seen), sizeof seen);
    const std::vector<float> params(16 + 16 * 3 * 9 + 18 + 18 * 16, 0.01f);
    w.write(reinterpret_cast<const char*>(params.data()), static_cast<std::streamsize>(params.size() * sizeof(float)));
  }
  expect_refused(test::run_cli(dir, {"run", "-m", dir.file("wide.cfg"), "-s", "synth:w=64,h=64,frames=2", "-q", "--max-memory", "1G"}),
                 exit_code::kModel, {"wide.cfg at input [1, 3, 416, 100000] needs", "over the memory budget of 1.07 GB"},
                 "Darknet width=100000");
}

TEST(RobustnessLoaders, FramesInFlightOverTheBudgetAreASourceError) {
  test::TempDir dir;
  cv::Mat big(4000, 4000, CV_8UC3, cv::Scalar(40, 80, 120));
  ASSERT_TRUE(cv::imwrite(dir.file("big.png"), big));
  expect_refused(test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("big.png"), "-q", "--max-memory", "64M"}),
                 exit_code::kSource, {"source " + dir.file("big.png") + ":", "frames of 4000x4000 in flight need", "over the memory budget of 67.1 MB"},
                 "4000x4000 image, 64M budget");
}

TEST(RobustnessLoaders, MaxMemoryTakesSizesWithAUnit) {
  EXPECT_EQ(parse_memory_size("8G"), uint64_t{8} << 30);
  EXPECT_EQ(parse_memory_size("512m"), uint64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("1.5GiB"), uint64_t{3} << 29);
  for (const char* bad : {"8", "", "G", "-1G", "nanG", "1e3G", "8X", "0M"}) EXPECT_FALSE(parse_memory_size(bad)) << bad;
  test::TempDir dir;
  expect_refused(test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "--max-memory", "lots"}),
                 exit_code::kUsage, {"--max-memory: must be a size with a unit, like 8G or 512M, got lots"}, "--max-memory lots");
}

}  // namespace
}  // namespace sd

// Darknet .weights are checked against the cfg before OpenCV reads them: a truncated file (which
// OpenCV loads into junk detections, or none) and a file made for another cfg are refused in one
// line naming both sizes (exit 3); an exact file, with either header version, runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "cli_util.h"
#include "core/error.h"
#include "model/model_info.h"

namespace sd {
namespace {

// Every kind of layer the count follows: batch-normed and grouped convolutions, route (concat, and
// a split with groups=2), shortcut, maxpool, upsample, dropout, reorg, yolo.
const char* kCfg =
    "[net]\nwidth=64\nheight=64\nchannels=3\n\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=2\npad=1\nactivation=leaky\n\n"     // 0: 8
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\ngroups=8\nstride=1\npad=1\nactivation=leaky\n\n"  // 1: 8
    "[shortcut]\nfrom=-2\nactivation=linear\n\n"                                                        // 2: 8
    "[route]\nlayers=-1,0\n\n"                                                                          // 3: 16
    "[route]\nlayers=-1\ngroups=2\ngroup_id=1\n\n"                                                      // 4: 8
    "[maxpool]\nsize=2\nstride=2\n\n"                                                                   // 5: 8
    "[dropout]\nprobability=.1\n\n"                                                                     // 6: 8
    "[reorg]\nstride=2\n\n"                                                                             // 7: 32
    "[convolutional]\nfilters=16\nsize=1\nstride=1\npad=1\nactivation=leaky\n\n"                        // 8: 16
    "[upsample]\nstride=2\n\n"                                                                          // 9: 16
    "[convolutional]\nsize=1\nstride=1\npad=1\nfilters=18\nactivation=linear\n\n"                       // 10: 18
    "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=1\nnum=3\n";
// 0: 4*8 + 8*3*9; 1: 4*8 + 8*1*9; 8: 16 + 16*32; 10: 18 + 18*16
constexpr int64_t kParams = (32 + 216) + (32 + 72) + (16 + 512) + (18 + 288);

void write_weights(const std::string& path, int32_t major, int32_t minor, int64_t params) {
  std::ofstream w(path, std::ios::binary);
  const int32_t version[3] = {major, minor, 0};
  w.write(reinterpret_cast<const char*>(version), sizeof version);
  const int64_t seen = 0;
  w.write(reinterpret_cast<const char*>(&seen), major * 10 + minor >= 2 ? 8 : 4);
  const std::vector<float> values(static_cast<size_t>(params), 0.01f);
  w.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
}

TEST(RobustnessDarknet, TheCfgsParameterCountFollowsEveryLayer) {
  test::TempDir dir;
  std::ofstream(dir.file("net.cfg")) << kCfg;
  auto cfg = parse_darknet_cfg(dir.file("net.cfg"));
  ASSERT_TRUE(cfg) << cfg.error().message;
  ASSERT_TRUE(cfg->weight_count.has_value());
  EXPECT_EQ(*cfg->weight_count, kParams);
}

TEST(RobustnessDarknet, ALayerOfUnknownWeightsLeavesTheCountUnknown) {
  test::TempDir dir;
  std::ofstream(dir.file("net.cfg")) << "[net]\nwidth=32\nheight=32\n\n[connected]\noutput=10\n\n"
                                        "[yolo]\nmask=0\nanchors=10,14\nclasses=1\nnum=1\n";
  auto cfg = parse_darknet_cfg(dir.file("net.cfg"));
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_FALSE(cfg->weight_count.has_value());
}

TEST(RobustnessDarknet, ARouteFromALaterLayerIsACfgError) {
  test::TempDir dir;
  std::ofstream(dir.file("net.cfg")) << "[net]\nwidth=32\nheight=32\n\n[route]\nlayers=-3\n\n"
                                        "[yolo]\nmask=0\nanchors=10,14\nclasses=1\nnum=1\n";
  auto cfg = parse_darknet_cfg(dir.file("net.cfg"));
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("[route] (layer 0) routes from layer -3"), std::string::npos) << cfg.error().message;
}

TEST(RobustnessDarknet, ExactWeightsRunWithEitherHeader) {
  test::TempDir dir;
  std::ofstream(dir.file("net.cfg")) << kCfg;
  for (auto [major, minor] : {std::pair{0, 2}, std::pair{0, 1}}) {
    write_weights(dir.file("net.weights"), major, minor, kParams);
    test::CliResult r = test::run_cli(dir, {"run", "-m", dir.file("net.cfg"), "-s", "synth:w=64,h=64,frames=2", "-q", "-d", dir.file("d.jsonl")});
    EXPECT_EQ(r.code, 0) << "version 0." << minor << ": " << r.err;
    EXPECT_EQ(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 2);
  }
}

TEST(RobustnessDarknet, WeightsThatDoNotMatchTheCfgAreRefused) {
  test::TempDir dir;
  std::ofstream(dir.file("net.cfg")) << kCfg;
  struct Case {
    int64_t params;
    const char* says;
  };
  for (const Case& c : {Case{kParams - 100, "the file is cut short"}, Case{kParams + 7, "they were made for another cfg"}}) {
    write_weights(dir.file("net.weights"), 0, 2, c.params);
    test::CliResult r = test::run_cli(dir, {"run", "-m", dir.file("net.cfg"), "-s", "synth:w=64,h=64,frames=2", "-q", "-d", dir.file("d.jsonl")});
    EXPECT_EQ(r.code, exit_code::kModel) << r.err;
    auto lines = test::nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    const std::string want = "streamdet: error: Darknet weights " + dir.file("net.weights") + " hold " + std::to_string(20 + 4 * c.params) +
                             " bytes but net.cfg needs " + std::to_string(20 + 4 * kParams) + " (" + std::to_string(kParams) +
                             " parameters and a 20-byte header): " + c.says;
    EXPECT_EQ(lines[0], want);
    EXPECT_FALSE(std::filesystem::exists(dir.file("d.jsonl")));
  }
}

}  // namespace
}  // namespace sd

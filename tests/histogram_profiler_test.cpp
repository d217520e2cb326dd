#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "runtime/latency_histogram.h"
#include "runtime/profiler.h"

namespace sd {
namespace {

TEST(LatencyHistogram, PercentilesWithinTwoPercentOfExact) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> dist(1.0, 0.8);
  std::vector<double> samples;
  LatencyHistogram h;
  for (int i = 0; i < 20000; ++i) {
    double v = dist(rng);
    samples.push_back(v);
    h.add(v);
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.5, 0.9, 0.99}) {
    double exact = samples[static_cast<size_t>(std::ceil(q * samples.size())) - 1];
    EXPECT_NEAR(h.percentile(q), exact, 0.02 * exact) << q;
  }
  EXPECT_EQ(h.count(), 20000);
  EXPECT_DOUBLE_EQ(h.max_ms(), samples.back());
}

TEST(LatencyHistogram, MergeEqualsOneBigHistogram) {
  LatencyHistogram a, b, all;
  for (int i = 1; i <= 100; ++i) {
    (i % 2 ? a : b).add(i * 0.1);
    all.add(i * 0.1);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_DOUBLE_EQ(a.percentile(0.5), all.percentile(0.5));
  EXPECT_NEAR(a.total_ms(), all.total_ms(), 1e-9);
}

TEST(Profiler, ReportsStagesAndFps) {
  Profiler p;
  p.start();
  StageRecorder& r1 = p.make_recorder("a");
  StageRecorder& r2 = p.make_recorder("b");
  for (int i = 0; i < 10; ++i) {
    r1.add(Stage::kRead, 1.0);
    r2.add(Stage::kInference, 10.0);
    p.count_frame_done();
  }
  p.stop();
  ProfileReport rep = p.report();
  ASSERT_EQ(rep.stages.size(), static_cast<size_t>(kStageCount));
  EXPECT_EQ(rep.stages[0].name, "read");
  EXPECT_EQ(rep.stages[0].hits, 10);
  EXPECT_NEAR(rep.stages[0].total_ms, 10.0, 1e-9);
  EXPECT_NEAR(rep.stages[2].per_hit_ms, 10.0, 1e-9);
  EXPECT_NEAR(rep.inference_fps, 100.0, 1e-6);  // 10 frames in 100 ms of inference
  std::string table = format_profile(rep);
  EXPECT_NE(table.find("inference"), std::string::npos);
  EXPECT_NE(table.find("100.00 FPS"), std::string::npos);
  auto j = profile_to_json(rep);
  EXPECT_EQ(j["stages"][2]["stage"], "inference");
  EXPECT_EQ(j["frames"], 10);
}

}  // namespace
}  // namespace sd

// The GPU's busy share (engine/native/gpu_busy.h): NVML loaded at run time, missing here; the
// summary and the verdict's sentence from injected readings; the sampler's polling.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/native/gpu_busy.h"

namespace sd::native {
namespace {

using namespace std::chrono_literals;

TEST(GpuBusy, AMissingNvmlIsOneLineNamingTheLibrary) {
  auto lib = NvmlLibrary::open("libstreamdet-no-such-nvml.so.1");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(lib.error().message.find("GPU busy share not available: cannot use libstreamdet-no-such-nvml.so.1"), std::string::npos)
      << lib.error().message;
  EXPECT_EQ(lib.error().message.find('\n'), std::string::npos);
}

TEST(GpuBusy, ALibraryWithoutNvmlsEntryPointsIsRefused) {
  auto lib = NvmlLibrary::open("libm.so.6");
  ASSERT_FALSE(lib);
  EXPECT_NE(lib.error().message.find("no nvmlInit_v2"), std::string::npos) << lib.error().message;
}

TEST(GpuBusy, WithoutNvmlTheSamplerDoesNotStartAndSaysWhy) {
  if (NvmlLibrary::shared()) GTEST_SKIP() << "NVML is present here";
  EXPECT_FALSE(NvmlLibrary::shared_problem().empty());
  auto s = GpuBusySampler::start_nvml(0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, NvmlLibrary::shared_problem());
}

TEST(GpuBusy, TheSummaryIsTheMeanBusyShareAndTheLargestMemoryUsed) {
  EXPECT_FALSE(summarize_gpu_busy({}));
  const std::vector<GpuReading> r{{40, 10, 100 << 20, 80ull << 30}, {50, 30, 300 << 20, 80ull << 30}, {39, 20, 200 << 20, 80ull << 30}};
  auto s = summarize_gpu_busy(r);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->samples, 3);
  EXPECT_NEAR(s->busy_ratio, 0.43, 1e-12);
  EXPECT_NEAR(s->memory_busy_ratio, 0.20, 1e-12);
  EXPECT_EQ(s->memory_used_max_bytes, 300u << 20);
  EXPECT_EQ(s->memory_total_bytes, 80ull << 30);
  // A reading above 100 % (never from NVML) counts as 100 %.
  auto full = summarize_gpu_busy(std::vector<GpuReading>{{250, 0, 0, 0}});
  EXPECT_DOUBLE_EQ(full->busy_ratio, 1.0);
}

TEST(GpuBusy, TheVerdictSaysWhichSideIsTheBottleneck) {
  GpuBusySummary s;
  s.busy_ratio = 0.43;
  EXPECT_EQ(gpu_busy_sentence(s), "GPU busy 0.43 of the run: the host side is the bottleneck (the GPU waits for it)");
  s.busy_ratio = 0.91;
  EXPECT_EQ(gpu_busy_sentence(s), "GPU busy 0.91 of the run: the GPU is the bottleneck");
  s.busy_ratio = kGpuBoundBusyRatio;
  EXPECT_NE(gpu_busy_sentence(s).find("the GPU is the bottleneck"), std::string::npos);
}

TEST(GpuBusy, TheSamplerPollsUntilStoppedAndSummarizesEveryReading) {
  std::atomic<int> calls{0};
  auto s = GpuBusySampler::start(
      [&]() -> Result<GpuReading> {
        const int n = calls++;
        return GpuReading{n % 2 ? 100u : 0u, 0, static_cast<uint64_t>(n), 1000};
      },
      1ms);
  while (calls.load() < 20) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(s->so_far());
  auto summary = s->stop();
  const int after_stop = calls.load();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->samples, after_stop);
  EXPECT_NEAR(summary->busy_ratio, (after_stop / 2) / static_cast<double>(after_stop), 1e-12);
  EXPECT_EQ(summary->memory_used_max_bytes, static_cast<uint64_t>(after_stop - 1));
  EXPECT_TRUE(s->error().empty());
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(calls.load(), after_stop);  // no more polling
  EXPECT_EQ(s->stop()->samples, after_stop);  // idempotent
}

TEST(GpuBusy, AFailingReadingEndsThePollingAndIsKept) {
  std::atomic<int> calls{0};
  auto s = GpuBusySampler::start(
      [&]() -> Result<GpuReading> {
        if (calls++ < 3) return GpuReading{60, 0, 0, 0};
        return fail(ErrorCode::kUnsupported, "NVML nvmlDeviceGetUtilizationRates failed: GPU is lost (15)");
      },
      1ms);
  while (s->error().empty()) std::this_thread::sleep_for(1ms);
  auto summary = s->stop();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->samples, 3);
  EXPECT_DOUBLE_EQ(summary->busy_ratio, 0.6);
  EXPECT_EQ(s->error(), "NVML nvmlDeviceGetUtilizationRates failed: GPU is lost (15)");
}

// Where NVML is (the GPU machine): real readings of GPU 0, in range.
TEST(GpuBusy, NvmlReadsTheGpuWhereThereIsOne) {
  if (!NvmlLibrary::shared()) GTEST_SKIP() << NvmlLibrary::shared_problem();
  auto r = NvmlLibrary::shared()->read(0);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LE(r->gpu_percent, 100u);
  EXPECT_GT(r->memory_total_bytes, 0u);
  auto s = GpuBusySampler::start_nvml(0, 10ms);
  ASSERT_TRUE(s) << s.error().message;
  std::this_thread::sleep_for(50ms);
  auto summary = (*s)->stop();
  ASSERT_TRUE(summary);
  EXPECT_GE(summary->samples, 1);
}

}  // namespace
}  // namespace sd::native

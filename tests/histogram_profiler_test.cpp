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

namespace sd {
namespace {

// A report with these stages (name, busy ms, threads) over one second of wall time.
ProfileReport report_with(std::vector<std::tuple<const char*, double, int>> stages, double cpu_ms, int cores,
                          double machine_busy_ms = -1) {
  ProfileReport r;
  r.wall_ms = 1000;
  r.frames = 100;
  r.cpu_ms = cpu_ms;
  r.cores = cores;
  r.machine_busy_ms = machine_busy_ms;
  for (auto& [name, busy, threads] : stages) {
    StageReport s;
    s.name = name;
    s.threads = threads;
    s.hits = 100;
    s.total_ms = busy;
    s.per_hit_ms = busy / 100;
    s.utilization = busy / (r.wall_ms * threads);
    r.stages.push_back(s);
  }
  return r;
}

// The demo's case on two cores: every stage looked under 85% busy, yet the process used both
// cores; the verdict said "inference" or "waiting for the source" before.
TEST(BottleneckVerdict, ARunThatUsesEveryCoreIsCpuBoundWhateverStageLooksBusiest) {
  auto r = report_with({{"read", 450, 1}, {"preprocess", 180, 1}, {"inference", 1150, 2}, {"write", 200, 1}}, 1900, 2);
  EXPECT_EQ(bottleneck_verdict(r),
            "CPU-bound: the stages need 1.9 of 2 cores (busy time: inference 58%, read 23%, write 10%); fewer threads or "
            "workers than cores, or a smaller input, would leave each stage a core");
}

TEST(BottleneckVerdict, WithCoresToSpareTheSaturatedStageIsTheBottleneck) {
  auto r = report_with({{"read", 200, 1}, {"inference", 950, 1}}, 1200, 4, 1300);
  EXPECT_EQ(bottleneck_verdict(r), "inference-bound: 9.50 ms a call (1 worker, 95% busy)");
}

TEST(BottleneckVerdict, WithNothingSaturatedAndCoresIdleTheInputIsTheLimit) {
  auto r = report_with({{"read", 100, 1}, {"inference", 300, 1}}, 450, 2, 500);
  r.sources.push_back(SourceReport{"slow.mp4", 100, 100});
  EXPECT_EQ(bottleneck_verdict(r),
            "input-bound: no stage is saturated (busiest: inference, 30% busy): the pipeline waits for frames, which arrive "
            "at 100.0 fps");
}

TEST(BottleneckVerdict, ALiveSourceThePipelineKeepsUpWithSetsThePace) {
  // Reading a camera is waiting for its clock: 95% "busy", yet the camera is the limit.
  auto r = report_with({{"read", 950, 1}, {"inference", 400, 2}, {"write", 50, 1}}, 700, 4);
  SourceReport cam{"rtsp://cam/1", 25, 25};
  cam.live = true;
  r.sources.push_back(cam);
  EXPECT_EQ(bottleneck_verdict(r), "source-bound: the source delivers 25.0 fps and the pipeline keeps up (busiest stage: inference, 20% busy)");
}

TEST(BottleneckVerdict, OutagesOfALiveSourceAreSaid) {
  auto r = report_with({{"read", 950, 1}, {"inference", 400, 2}}, 700, 4);
  SourceReport cam{"rtsp://cam/1", 25, 25};
  cam.live = true;
  cam.outages = 1;
  cam.outage_ms = 10240;
  cam.frames_lost = 256;
  r.sources.push_back(cam);
  EXPECT_EQ(bottleneck_verdict(r),
            "source-bound: the source delivers 25.0 fps and the pipeline keeps up (busiest stage: inference, 20% busy); "
            "rtsp://cam/1 was down 10.2 s in 1 outage (256 frames lost)");
}

TEST(BottleneckVerdict, ALiveSourceTooFastForInferenceNamesInferenceAndTheDrops) {
  auto r = report_with({{"read", 990, 1}, {"inference", 1900, 2}}, 2100, 4);
  SourceReport cam{"rtsp://cam/1", 60, 30};
  cam.live = true;
  r.sources.push_back(cam);
  r.drops[static_cast<size_t>(DropReason::kPolicy)] = 30;
  EXPECT_EQ(bottleneck_verdict(r),
            "inference-bound: 19.00 ms a call (2 workers, 95% busy); the source delivers 60.0 fps, 30 frames dropped to keep up");
}

TEST(BottleneckVerdict, ASaturatedWriterIsWriterBoundAndNamesTheOutputs) {
  auto r = report_with({{"read", 100, 1}, {"inference", 300, 1}, {"draw", 50, 1}, {"write", 910, 1}}, 1400, 4);
  r.outputs = {"video out.mp4", "jsonl d.jsonl"};
  r.stages[0].blocked_ms = 700;
  EXPECT_EQ(bottleneck_verdict(r),
            "writer-bound: writing video out.mp4, jsonl d.jsonl takes 9.10 ms a frame (91% busy); read is blocked 70% of the "
            "time on a full queue");
}

TEST(BottleneckVerdict, AStageOffTheCpuIsSaidToWait) {
  auto r = report_with({{"read", 100, 1}, {"write", 900, 1}}, 300, 4);
  r.stages[1].cpu_ms = 90;  // a disk that cannot keep up
  EXPECT_EQ(bottleneck_verdict(r),
            "writer-bound: writing the outputs takes 9.00 ms a frame (90% busy), on the CPU only 10% of that time (waiting on a "
            "disk, a device or a lock)");
}

// The demo's case on this 2-core machine when the stages use "only" 1.77 cores: the rest of the
// time they queued for a core (the kernel's run-queue delay), no one else ran, and no stage is
// saturated: CPU-bound, with what the stages would need (it said "inference-bound, 57% busy").
TEST(BottleneckVerdict, StagesQueueingForTheCoresTheyShareAreCpuBound) {
  auto r = report_with({{"read", 120, 1}, {"inference", 1140, 2}, {"draw", 190, 1}, {"write", 500, 1}}, 1770, 2, 1780);
  r.run_queue_ms = 1430;
  r.stages[0].blocked_ms = 700;
  EXPECT_EQ(bottleneck_verdict(r),
            "CPU-bound: the stages need 3.2 of 2 cores (on a core 1.8, waiting for one 1.4; busy time: inference 58%, write "
            "26%, draw 10%); fewer threads or workers than cores, or a smaller input, would leave each stage a core");
}

TEST(BottleneckVerdict, CoresTakenByOtherProcessesAreCpuStarvation) {
  // The stages used 0.7 cores, the machine was 100% busy and our threads waited for a core.
  auto r = report_with({{"read", 200, 1}, {"inference", 1300, 2}}, 700, 2, 2000);
  r.run_queue_ms = 650;
  EXPECT_EQ(bottleneck_verdict(r),
            "CPU-starved: other processes use 1.3 of 2 cores and the stages' threads waited 650 ms for a core (0.7 cores' "
            "worth of the run): every stage looks slower than it is");
  r.run_queue_ms = 100;  // a busy machine whose others did not get in our way: the stage figures stand
  EXPECT_EQ(bottleneck_verdict(r).rfind("inference-bound", 0), 0u) << bottleneck_verdict(r);
}

TEST(BottleneckVerdict, AReaderHeldBackByFullQueuesIsNotWaitingForInput) {
  auto r = report_with({{"read", 50, 1}, {"inference", 1100, 2}}, 1200, 4);
  r.stages[0].blocked_ms = 800;
  EXPECT_EQ(bottleneck_verdict(r), "inference-bound: 11.00 ms a call (2 workers, 55% busy); read is blocked 80% of the time on a full queue");
}

TEST(BottleneckVerdict, ASaturatedReaderIsDecodeBoundAndTheWaitingStageIsNamed) {
  auto r = report_with({{"read", 970, 1}, {"preprocess", 100, 1}, {"inference", 300, 1}}, 1400, 4);
  r.stages[1].wait_ms = 850;
  EXPECT_EQ(bottleneck_verdict(r),
            "decode-bound: reading and decoding take 9.70 ms a frame (1 reader, 97% busy); preprocess waits 85% of the time "
            "for input");
}

}  // namespace
}  // namespace sd

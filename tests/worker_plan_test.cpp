// How the pipeline splits inference threads into workers (runtime/worker_plan.h): what a user
// gets without --workers, and that given workers divide the threads instead of each taking all.
#include <gtest/gtest.h>

#include "runtime/detector.h"
#include "runtime/worker_plan.h"

namespace sd {
namespace {

TEST(WorkerPlan, FilesOnTheNativeEngineGetOneThreadWorkersByDefault) {
  WorkerPlan p = plan_workers(0, 0, 2, "native", false);
  EXPECT_EQ(p.workers, 2);
  EXPECT_EQ(p.threads_per_worker, 1);
  p = plan_workers(0, 3, 16, "native", false);  // --threads 3 on a big machine: 3 one-thread workers
  EXPECT_EQ(p.workers, 3);
  EXPECT_EQ(p.threads_per_worker, 1);
  p = plan_workers(0, 0, 16, "native", false);  // capped, the threads shared among them
  EXPECT_EQ(p.workers, kMaxAutoWorkers);
  EXPECT_EQ(p.threads_per_worker, 16 / kMaxAutoWorkers);
  p = plan_workers(0, 0, 1, "native", false);
  EXPECT_EQ(p.workers, 1);
  EXPECT_EQ(p.threads_per_worker, 1);
}

TEST(WorkerPlan, LiveSourcesAndOtherEnginesGetOneWorkerWithEveryThread) {
  WorkerPlan p = plan_workers(0, 0, 8, "native", true);
  EXPECT_EQ(p.workers, 1);
  EXPECT_EQ(p.threads_per_worker, 8);
  p = plan_workers(0, 2, 8, "opencv", false);
  EXPECT_EQ(p.workers, 1);
  EXPECT_EQ(p.threads_per_worker, 2);
}

// Before: with --workers and no --threads, every worker took every core (4 OpenMP threads on
// 2 cores with --workers 2).
TEST(WorkerPlan, GivenWorkersDivideTheThreads) {
  WorkerPlan p = plan_workers(2, 0, 2, "native", true);
  EXPECT_EQ(p.workers, 2);
  EXPECT_EQ(p.threads_per_worker, 1);
  p = plan_workers(3, 8, 2, "native", false);
  EXPECT_EQ(p.workers, 3);
  EXPECT_EQ(p.threads_per_worker, 2);
  p = plan_workers(4, 2, 2, "opencv", false);  // more workers than threads: one each
  EXPECT_EQ(p.workers, 4);
  EXPECT_EQ(p.threads_per_worker, 1);
}

TEST(WorkerPlan, AutoEngineResolvesByModelFormat) {
  ModelOptions o;
  o.model = "m.onnx";
  EXPECT_EQ(resolved_engine_name(o), "native");
  o.model = "yolo.CFG";
  EXPECT_EQ(resolved_engine_name(o), "opencv");
  o.engine = "native";
  EXPECT_EQ(resolved_engine_name(o), "native");
}

}  // namespace
}  // namespace sd

// How the pipeline splits inference threads into workers (runtime/worker_plan.h): what a user
// gets without --workers, and that given workers divide the threads instead of each taking all.
#include <gtest/gtest.h>

#include <ostream>

#include "runtime/detector.h"
#include "runtime/worker_plan.h"

namespace sd {
namespace {

// gtest prints a plan that differs as its two numbers.
void PrintTo(const WorkerPlan& p, std::ostream* os) { *os << p.workers << " workers x " << p.threads_per_worker << " threads"; }

TEST(WorkerPlan, FilesOnTheNativeEngineGetOneThreadWorkersByDefault) {
  EXPECT_EQ(plan_workers(0, 0, 2, "native", false), (WorkerPlan{2, 1}));
  EXPECT_EQ(plan_workers(0, 3, 16, "native", false), (WorkerPlan{3, 1}));  // --threads 3 on a big machine
  EXPECT_EQ(plan_workers(0, 0, 16, "native", false), (WorkerPlan{kMaxAutoWorkers, 16 / kMaxAutoWorkers}));  // capped, threads shared
  EXPECT_EQ(plan_workers(0, 0, 1, "native", false), (WorkerPlan{1, 1}));
}

TEST(WorkerPlan, LiveSourcesAndOtherEnginesGetOneWorkerWithEveryThread) {
  EXPECT_EQ(plan_workers(0, 0, 8, "native", true), (WorkerPlan{1, 8}));
  EXPECT_EQ(plan_workers(0, 2, 8, "opencv", false), (WorkerPlan{1, 2}));
}

// Before: with --workers and no --threads, every worker took every core (4 OpenMP threads on
// 2 cores with --workers 2).
TEST(WorkerPlan, GivenWorkersDivideTheThreads) {
  EXPECT_EQ(plan_workers(2, 0, 2, "native", true), (WorkerPlan{2, 1}));
  EXPECT_EQ(plan_workers(3, 8, 2, "native", false), (WorkerPlan{3, 2}));
  EXPECT_EQ(plan_workers(4, 2, 2, "opencv", false), (WorkerPlan{4, 1}));  // more workers than threads: one each
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

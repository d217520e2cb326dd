// The GPU check's timing part (issue 22): for one model (the YOLOv8n architecture on the GPU
// machine), the engine's latency at batch 1 with CUDA graphs and without, and its throughput at
// larger batches, each row as JSON the moment it is measured. Latency is the wall time of one
// NativeSession::run: the input copied into page-locked staging, uploaded, the model, the outputs
// downloaded and copied out, one run at a time; images_per_s is batch / median latency.
// Every batch holds the same image in each slot, so every slot's output must equal the batch-1
// output, and the graph's output must equal the plain launches': both are checked (a timing that
// comes with a wrong answer fails).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/native/backend.h"

namespace sd::gpu_check {

struct TimingOptions {
  std::string model;              // ONNX path, with a dynamic batch for the batch rows
  std::string name;               // what the rows call it ("yolov8n"); "" : the file's stem
  int channels = 3, height = 640, width = 640;
  std::vector<int> batches{1, 8, 32, 64};  // the throughput rows (batch 1 comes with graphs on and off)
  int iters = 50;                 // timed runs per row at most
  double row_seconds = 10;        // timed runs of a row stop after this (warm-up not counted)
  double budget_seconds = 60;     // the whole part: rows that do not fit are recorded as skipped
  int threads = 4;                // the CPU threads of the session
  // > 0: a last row with this batch on two sessions at once, each on its own thread and stream
  // (images_per_s: all their images over the wall time), to show the copies overlapping kernels.
  int overlap_batch = 0;
  // The device's precisions, the first leading: "fp16" first (the GPU's default) times fp32's batch
  // 1 first as the reference fp16 is held to, then every row in fp16, then fp32's largest batch;
  // "fp32" alone (the CPU), every row in fp32.
  std::vector<std::string> precisions{"fp32"};
  // After the rows, per batch here: the engine profile (SessionOptions::profile_rows, each device
  // step waited for) of `profile_runs` plain runs in the leading precision, on stderr: where the
  // GPU's time goes, step by step and per op type.
  std::vector<int> profile_batches;
  int profile_runs = 10;
};

// Runs the rows in order (batch 1 with graphs in fp32 and then in the leading precision, batch 1
// without graphs, batch 1 with graphs and its input and outputs on the device, then each other
// batch with graphs, the largest again with its input and outputs on the device, then the
// two-worker row, all in the leading precision; then fp32's largest batch where fp16 leads). Where
// cuDNN's graph engine is on (cuda_backend.h), both rows on the device have a twin planned with
// the legacy engine alone ("cudnn_graph": false, "graph_engine_speedup": its median over the
// graph engine row's).
// and hands each to `row` as soon as it is measured or skipped. `gpu` nullptr: the CPU alone.
// Returns the number of rows that failed.
int run_timing(const TimingOptions& options, const std::shared_ptr<const native::Backend>& gpu,
               const std::function<void(const nlohmann::json&)>& row);

}  // namespace sd::gpu_check

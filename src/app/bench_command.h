// `streamdet bench`: engine-only timing of a model (warm-up, then N timed iterations: min,
// median, p90, p99, throughput) and, with --source, a full pipeline run; --sweep runs every
// combination of workers / batch / input-size / threads and prints one markdown table (or one
// JSON object per row with --json), with the commit and the machine.
#pragma once

#include <string>
#include <vector>

#include <CLI/App.hpp>

#include "core/error.h"
#include "runtime/run_options.h"

namespace sd {

struct BenchOptions {
  ModelOptions model;
  RunOptions run;                   // workers, batch, max_frames, outputs of the pipeline run
  std::vector<std::string> sources;
  std::vector<std::string> sweep;   // "workers=1,2,4" ...
  int warmup = 5;
  int iterations = 50;
  bool json = false;
  int frame_width = 0, frame_height = 0;  // for --input-size auto (from the source)
  bool live_source = false;               // the source is live: the worker plan is the one `run` makes for it
};

void add_bench_options(CLI::App& cmd, BenchOptions& options);
Status run_bench(const BenchOptions& options);

}  // namespace sd

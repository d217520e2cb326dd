// `streamdet bench`: engine-only timing of a model (warm-up, then N timed iterations).
#pragma once

#include <CLI/App.hpp>

#include "core/error.h"
#include "runtime/run_options.h"

namespace sd {

struct BenchOptions {
  ModelOptions model;
  int warmup = 5;
  int iterations = 50;
  int batch = 1;
  bool json = false;
};

void add_bench_options(CLI::App& cmd, BenchOptions& options);
Status run_bench(const BenchOptions& options);

}  // namespace sd

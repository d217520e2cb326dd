#include "app/bench_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/frame.h"
#include "runtime/detector.h"

namespace sd {

void add_bench_options(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("--warmup", o.warmup, "untimed iterations first")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd.add_option("--iterations,-n", o.iterations, "timed iterations")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("--batch", o.batch, "images per inference call")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_flag("--json", o.json, "print one JSON object instead of a table");
}

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  size_t i = std::min(sorted.size() - 1, static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - (q > 0 ? 1 : 0));
  return sorted[i];
}
}  // namespace

Status run_bench(const BenchOptions& o) {
  SD_ASSIGN_OR_RETURN(Detector det, load_detector(o.model, cv::Size()));
  if (o.batch > 1 && !det.engine->capabilities().dynamic_batch)
    return fail(ErrorCode::kUsage, "--batch " + std::to_string(o.batch) + ": model " + o.model.model + " has a fixed batch of 1");
  Tensor input(Shape{o.batch, 3, det.input_size.height, det.input_size.width});
  std::fill_n(input.data(), input.numel(), 0.5f);
  std::vector<Tensor> outputs;
  for (int i = 0; i < o.warmup; ++i) SD_TRY(det.first_context->infer(input.view(), outputs));
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(o.iterations));
  for (int i = 0; i < o.iterations; ++i) {
    auto t0 = Clock::now();
    SD_TRY(det.first_context->infer(input.view(), outputs));
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  double median = quantile(ms, 0.5);
  double fps = median > 0 ? 1000.0 * o.batch / median : 0;
  if (o.json) {
    nlohmann::json j = {{"model", o.model.model},
                        {"engine", det.engine->name()},
                        {"device", det.engine->capabilities().device},
                        {"threads", o.model.threads},
                        {"batch", o.batch},
                        {"input_size", std::to_string(det.input_size.width) + "x" + std::to_string(det.input_size.height)},
                        {"engine_latency_ms",
                         {{"min", ms.front()}, {"median", median}, {"p90", quantile(ms, 0.9)}, {"p99", quantile(ms, 0.99)}}},
                        {"engine_fps", fps}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("model %s  engine %s  device %s  threads %d  batch %d  input %dx%d\n", o.model.model.c_str(),
                det.engine->name().c_str(), det.engine->capabilities().device.c_str(), o.model.threads, o.batch,
                det.input_size.width, det.input_size.height);
    std::printf("latency ms: min %.3f  median %.3f  p90 %.3f  p99 %.3f  |  %.2f images/s (%d iterations)\n", ms.front(),
                median, quantile(ms, 0.9), quantile(ms, 0.99), fps, o.iterations);
  }
  return ok();
}

}  // namespace sd

// streamdet_gpu_check: everything the GPU machine is for, in one self-contained program (the
// native engine without OpenCV, FFmpeg or GStreamer, which that machine lacks): what CUDA sees,
// the backend conformance cases of every op the CUDA backend claims against the CPU reference,
// in fp32 and in fp16 (--precision fp16: the GPU's tensors in fp16), and for each model given, in
// fp32 and fp16, parity of its outputs with the CPU engine (fp16: also the detections of a YOLOv8
// head against the CPU's float32 ones) and the latency of both.
// Prints a table (line by line, also into a pipe) and writes everything as JSON, rewritten after
// each op and each model: a crash leaves the results so far ("complete": false). After each op's
// cases it waits for the GPU and asks whether a kernel faulted: a lost context is recorded as
// "context lost after <op>", and the GPU work stops there (the JSON is still written).
// scripts/gpu-pack.sh builds and packs it, scripts/gpu-check.sh runs it there; docs/gpu.md says how.
//   streamdet_gpu_check --json out.json [--cases 64] [--model m.onnx [--input 1x3x640x640]]... [--iters 50]
//       [--timing yolov8n.onnx [--timing-input 3x640x640] [--batches 1 8 32 64] [--timing-budget 45]]
// --timing: latency at batch 1 with and without CUDA graphs and throughput per batch (gpu_check_timing.h).
// --streams 8 32: many synthetic streams end to end on one GPU, M workers (gpu_check_streams.h).
// --nvdec-e2e DIR: a 720p H.264 clip through NVDEC, the GPU letterbox, the model and the GPU
// decode + NMS, frames per second against the engine alone (gpu_check_nvdec_e2e.h).
// With --backend cpu it checks the CPU's default path the same way: what the test suite runs to
// keep this program and its JSON working on machines without a GPU (tests/gpu_check_json.sh).
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <random>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/op_cases.h"
#include "conformance/synthetic_scene.h"
#include "core/build_info.h"
#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/session.h"
#include "postprocess/detection_parity.h"
#include "driver_version.h"
#include "gpu_check_nvdec_e2e.h"
#include "gpu_check_streams.h"
#include "gpu_check_timing.h"
#include "nvdec_check.h"

using namespace sd;
using namespace sd::native;
using nlohmann::json;

namespace {

struct ModelArg {
  std::string path;
  Shape input;
};

Result<Shape> parse_shape(const std::string& text) {
  Shape s;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t x = text.find('x', at);
    const std::string part = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || s.rank == Shape::kMaxRank)
      return fail(ErrorCode::kUsage, "--input " + text + ": expected dims like 1x3x640x640");
    s[s.rank++] = std::stoll(part);
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return s;
}

// The q-quantile (nearest rank) of v: 0.5 the median, 0.9 the p90.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The kernel driver's version ("580.159.04", driver_version.h), from /proc: "" where there is none.
std::string driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  return gpu_check::driver_version_from(line);
}

// cuDNN's version where the loader finds the library (the GPU machine's PyTorch wheels), else null.
json cudnn_version() {
  for (const char* name : {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}) {
    void* h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
    if (!h) continue;
    using Fn = size_t (*)();
    auto fn = reinterpret_cast<Fn>(dlsym(h, "cudnnGetVersion"));
    const json v = fn ? json(fn()) : json(name);
    dlclose(h);
    return v;
  }
  return nullptr;
}

// Times `iters` runs after a warm-up; returns per-run milliseconds, or the error.
Result<std::vector<double>> time_runs(NativeSession& s, const HostTensor& x, int iters, std::vector<HostTensor>& out) {
  TensorRef ref = x.ref();
  for (int i = 0; i < 3; ++i) SD_TRY(s.run(std::span<const TensorRef>(&ref, 1), out));
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    SD_TRY(s.run(std::span<const TensorRef>(&ref, 1), out));
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

// fp16's verdict on a model beyond its raw outputs: where the model has one YOLOv8 head output
// ([N, 4 + classes, anchors]), the detections of every image (threshold 0.25, NMS 0.45) of the
// fp16 run against the CPU's float32 ones: the same classes, every box corner within 1 px, a
// score within 0.02 of the threshold counted as "borderline" rather than a difference. The
// verdict is binding where the reference has at most 100 detections (a trained model on a scene;
// a model with random weights scores every anchor near 0.5, and the NMS of hundreds of
// overlapping boxes reorders under any rounding).
json detection_parity(const std::vector<HostTensor>& ref, const std::vector<HostTensor>& got) {
  if (ref.size() != 1 || got.size() != 1 || ref[0].shape().rank != 3 || ref[0].shape() != got[0].shape()) return nullptr;
  const Shape& s = ref[0].shape();
  const int64_t channels = s[1], anchors = s[2];
  if (channels < 5 || anchors <= channels) return nullptr;  // not [N, 4 + classes, anchors]
  constexpr float kConf = 0.25f, kIou = 0.45f, kMargin = 0.02f, kMaxPx = 1.f;
  DetectionParity total;
  for (int64_t n = 0; n < s[0]; ++n) {
    const Detections a = decode_yolov8_plain(ref[0].as<float>() + n * channels * anchors, channels, anchors, kConf, kIou);
    const Detections b = decode_yolov8_plain(got[0].as<float>() + n * channels * anchors, channels, anchors, kConf, kIou);
    const DetectionParity p = compare_detections(a, b, kConf, kMargin, kMaxPx);
    total.reference += p.reference, total.candidate += p.candidate, total.matched += p.matched;
    total.missing += p.missing, total.extra += p.extra, total.borderline += p.borderline;
    total.max_corner_px = std::max(total.max_corner_px, p.max_corner_px);
  }
  return {{"reference", total.reference}, {"fp16", total.candidate}, {"matched", total.matched}, {"missing", total.missing},
          {"extra", total.extra}, {"borderline", total.borderline}, {"max_corner_px", total.max_corner_px},
          {"same", total.same()}, {"binding", total.reference <= 100 * s[0]}};
}

// `gpu` nullptr: the CPU alone on both sides (--backend cpu). fp16: the device session stores
// its float tensors in fp16 (SessionOptions::device_fp16; the CPU backend has no fp16 and keeps
// float32, which the row's "device_float" says).
json check_model(const ModelArg& m, const std::shared_ptr<const Backend>& gpu, int iters, int threads, bool fp16) {
  json row{{"model", m.path}, {"precision", fp16 ? "fp16" : "fp32"}, {"batch", m.input.rank > 0 ? m.input[0] : 1}, {"input", m.input.str()},
           {"pass", false}, {"error", nullptr}};
  auto model = NativeModel::load(m.path);
  if (!model) return row.update({{"error", model.error().message}}), row;
  HostTensor x(DType::kFloat32, m.input);
  conformance::fill_scene(x);  // an image's range after normalization
  SessionOptions cpu_options;
  cpu_options.threads = threads;
  auto cpu = NativeSession::create(*model, cpu_options);
  SessionOptions gpu_options = cpu_options;
  if (gpu) gpu_options.backends = {gpu};
  gpu_options.device_fp16 = fp16;
  auto dev = NativeSession::create(*model, gpu_options);
  if (!cpu || !dev) return row.update({{"error", (!cpu ? cpu.error() : dev.error()).message}}), row;
  auto summary = (*dev)->plan_summary({m.input});
  if (!summary) return row.update({{"error", summary.error().message}}), row;
  json backends = json::array();
  for (const auto& b : summary->backends)
    backends.push_back({{"name", b.name}, {"steps", b.steps}, {"arena_bytes", b.arena_bytes}, {"float", b.precision}});
  row["backends"] = backends;
  row["device_float"] = summary->backends.empty() ? "float32" : summary->backends[0].precision;
  row["copies_per_run"] = summary->copies;
  // Which convolutions cuDNN took and which fell back to the direct kernel, and why (the step's
  // implementation: "cudnn:<algo> (<why not the graph engine>)", "cudnn-graph:eng<id> (<times>)",
  // "direct (cudnn: <reason>; cudnn-graph: <reason>)"). cudnn_conv_steps counts both cuDNN engines.
  json conv_steps = json::array();
  int cudnn_steps = 0, cudnn_graph_steps = 0;
  for (const auto& st : summary->steps) {
    const bool legacy = st.implementation.rfind("cudnn:", 0) == 0, graph = st.implementation.rfind("cudnn-graph:", 0) == 0;
    if (!legacy && !graph && st.implementation.rfind("direct", 0) != 0) continue;
    cudnn_steps += legacy || graph;
    cudnn_graph_steps += graph;
    conv_steps.push_back({{"step", st.label}, {"implementation", st.implementation}});
  }
  row["conv_steps"] = conv_steps;
  row["cudnn_conv_steps"] = cudnn_steps;
  row["cudnn_graph_conv_steps"] = cudnn_graph_steps;
  std::vector<HostTensor> cpu_out, gpu_out;
  auto cpu_ms = time_runs(**cpu, x, std::max(3, iters / 5), cpu_out);
  auto gpu_ms = time_runs(**dev, x, iters, gpu_out);
  if (!cpu_ms || !gpu_ms) return row.update({{"error", (!cpu_ms ? cpu_ms.error() : gpu_ms.error()).message}}), row;
  // Engine latency: input upload to output download, one run at a time.
  const double med = quantile(*gpu_ms, 0.5);
  row["latency_ms"] = {{"median", med}, {"p90", quantile(*gpu_ms, 0.9)}, {"min", *std::min_element(gpu_ms->begin(), gpu_ms->end())}};
  row["images_per_s"] = med > 0 ? static_cast<double>(row["batch"].get<int64_t>()) * 1000.0 / med : 0.0;
  row["cpu_latency_ms"] = {{"median", quantile(*cpu_ms, 0.5)}, {"p90", quantile(*cpu_ms, 0.9)}};
  double max_abs = 0, max_rel = 0, ref_max = 0;
  bool finite = true;
  for (size_t o = 0; o < cpu_out.size() && o < gpu_out.size(); ++o)
    for (int64_t i = 0; i < cpu_out[o].numel(); ++i) {
      const double a = gpu_out[o].as<float>()[i], b = cpu_out[o].as<float>()[i];
      finite = finite && std::isfinite(a);
      max_abs = std::max(max_abs, std::fabs(a - b));
      ref_max = std::max(ref_max, std::fabs(b));
    }
  max_rel = ref_max > 0 ? max_abs / ref_max : max_abs;
  row["outputs"] = cpu_out.size();
  row["max_abs_diff"] = max_abs;
  row["max_abs_diff_over_max_abs"] = max_rel;
  const double tolerance = fp16 ? conformance::kFp16ModelTolerance : conformance::kFp32ModelTolerance;
  row["tolerance"] = tolerance;
  const char* parity_key = fp16 ? "parity_fp16" : "parity_fp32";
  row[parity_key] = finite && gpu_out.size() == cpu_out.size() && max_rel <= tolerance;
  row["pass"] = row[parity_key];
  if (!row["pass"].get<bool>())
    row["error"] = !finite ? "non-finite outputs"
                   : gpu_out.size() != cpu_out.size() ? "output count differs"
                                                       : std::string(fp16 ? "fp16" : "fp32") + " parity above " + json(tolerance).dump() + " relative";
  if (fp16) {
    // The target: fp16 detections the same set as float32's.
    row["detections"] = detection_parity(cpu_out, gpu_out);
    const json& d = row["detections"];
    if (row["pass"].get<bool>() && !d.is_null() && d["binding"].get<bool>() && !d["same"].get<bool>()) {
      row["pass"] = false;
      row["error"] = "fp16 detections differ from float32's: " + d.dump();
    }
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a pipe (tee): a crash keeps everything printed before it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"streamdet GPU check: CUDA backend conformance, model parity and latency, as JSON"};
  std::string json_path, abort_after;
  int cases = 64, iters = 50, device = 0, threads = 4;
  std::string backend_name = "cuda";
  std::vector<std::string> model_paths, inputs;
  app.add_option("--json", json_path, "write the results here (rewritten after each op and model)");
  app.add_option("--cases", cases, "random cases per op")->capture_default_str();
  app.add_option("--model", model_paths, "ONNX model for parity and latency (repeatable)");
  app.add_option("--input", inputs, "its input shape, e.g. 1x3x640x640 (one per --model; default 1x3x640x640)");
  app.add_option("--iters", iters, "timed runs per model")->capture_default_str();
  app.add_option("--device", device, "CUDA device")->capture_default_str();
  app.add_option("--backend", backend_name, "backend under test: cuda, or cpu (its default path, to check this program)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cuda", "cpu"}));
  app.add_option("--threads", threads, "CPU threads of both sessions")->capture_default_str();
  gpu_check::TimingOptions timing;
  std::string timing_input = "3x640x640";
  app.add_option("--timing", timing.model, "time this model (dynamic batch): batch 1 with and without CUDA graphs, then --batches");
  app.add_option("--timing-name", timing.name, "what the timing rows call it (default: the file's name)");
  app.add_option("--timing-input", timing_input, "its image, CxHxW")->capture_default_str();
  app.add_option("--batches", timing.batches, "the throughput rows' batches")->capture_default_str();
  app.add_option("--timing-iters", timing.iters, "timed runs per timing row at most")->capture_default_str();
  app.add_option("--timing-budget", timing.budget_seconds, "seconds for all timing rows (the rest are recorded as skipped)")->capture_default_str();
  app.add_option("--overlap-batch", timing.overlap_batch, "a last timing row: this batch on two sessions at once (0: none)")
      ->capture_default_str();
  app.add_option("--timing-precisions", timing.precisions, "the timing rows' precisions, the first leading (fp16 fp32 on a GPU)")
      ->check(CLI::IsMember({"fp32", "fp16"}))
      ->capture_default_str();
  app.add_option("--profile-batches", timing.profile_batches, "after the timing rows, the engine profile per step at these batches (stderr)");
  app.add_option("--row-seconds", timing.row_seconds, "seconds of timed runs per timing row at most")->capture_default_str();
  gpu_check::StreamsOptions streams;
  streams.streams.clear();
  std::string streams_input, stream_frame = "1920x1080";
  app.add_option("--streams", streams.streams,
                 "many streams on one GPU: one row per count (8 32 there), each stream of synthetic frames end to end");
  app.add_option("--streams-model", streams.model, "the streams' model, a YOLOv8 head (default: --timing's)");
  app.add_option("--streams-input", streams_input, "its image, CxHxW (default: --timing-input)");
  app.add_option("--stream-workers", streams.workers, "worker threads, each with its own session (and CUDA stream)")->capture_default_str();
  app.add_option("--stream-frame", stream_frame, "the synthetic frames' size, WxH")->capture_default_str();
  app.add_option("--streams-seconds", streams.row_seconds, "timed seconds per streams row (and of the engine alone)")->capture_default_str();
  app.add_option("--streams-budget", streams.budget_seconds, "seconds for all streams rows (the rest are recorded as skipped)")
      ->capture_default_str();
  std::vector<std::string> nvdec_clips;
  app.add_option("--nvdec-clip", nvdec_clips,
                 "an NVDEC clip's folder (tools/nvdec_clip.h), decoded by NVDEC against its CPU-decoded frames (repeatable: "
                 "\"nvdec\" for H.264, \"nvdec_hevc\" for HEVC)");
  gpu_check::NvdecE2eOptions e2e;
  app.add_option("--nvdec-e2e", e2e.clip,
                 "an NVDEC clip's folder (no reference needed: the pack's 720p H.264) end to end on the GPU, against the engine alone");
  app.add_option("--nvdec-e2e-model", e2e.model, "its model, a YOLOv8 head (default: --timing's; input --timing-input)");
  app.add_option("--nvdec-e2e-seconds", e2e.seconds, "its timed seconds end to end (the engine alone: 3)")->capture_default_str();
  app.add_option("--nvdec-e2e-budget", e2e.budget_seconds, "seconds for the whole part (the timed part recorded as skipped past it)")
      ->capture_default_str();
  double cudnn_graph_budget = -1;
  app.add_option("--cudnn-graph-budget", cudnn_graph_budget,
                 "seconds each part of the check (conformance, models, timing, streams, NVDEC end to end) may spend planning "
                 "convolutions on cuDNN's graph engine (0: the legacy engine alone; default: the engine's default, off)");
  double conformance_graph_budget = -1;
  app.add_option("--cudnn-graph-conformance-budget", conformance_graph_budget,
                 "the conformance's own graph planning grant (default: --cudnn-graph-budget): its hundreds of random "
                 "geometries are each planned anew");
  std::vector<std::string> only_ops;
  app.add_option("--ops", only_ops,
                 "the conformance for these ops alone (default: every op the backend claims; \"none\": no conformance), "
                 "for a quick rerun");
  app.add_option("--abort-after", abort_after, "abort() once this op's results are written, as a crash would (tests the partial JSON)");
  CLI11_PARSE(app, argc, argv);

  json report{{"complete", false}, {"commit", build_commit()}, {"machine", machine_summary()}, {"cpu", cpu_backend()->description()}};
  const CudaInfo info = cuda_info();
  const bool on_gpu = backend_name == "cuda";
  report["gpu"] = {{"name", on_gpu && device >= 0 && static_cast<size_t>(device) < info.devices.size() ? json(info.devices[static_cast<size_t>(device)]) : json(nullptr)},
                   {"driver", driver_version()}, {"cuda_driver", info.driver}, {"cuda_runtime", info.runtime}, {"cudnn", cudnn_version()}};
  report["cuda"] = {{"built", info.built}, {"runtime", info.runtime}, {"driver", info.driver}, {"devices", info.devices},
                    {"problem", info.problem}, {"cudnn", info.cudnn}, {"cudnn_loaded", info.cudnn_loaded}};
  report["conformance"] = json::array();
  report["models"] = json::array();
  report["timing"] = json::array();
  report["streams"] = json::array();
  // Written whole each time (to a temporary, then renamed): never half a file.
  auto write = [&](int code) {
    if (!json_path.empty()) {
      const std::string tmp = json_path + ".tmp";
      std::ofstream(tmp) << report.dump(2) << "\n";
      std::rename(tmp.c_str(), json_path.c_str());
    }
    return code;
  };
  // Each part its own grant (GPU run 4: the conformance's random geometries spent a process-wide
  // 60 s before the models had any); what each part spent goes into the report.
  json graph_planning = json::object();
  std::string graph_part;
  double graph_part_start = 0;
  auto graph_planning_part = [&](const std::string& part) {
    if (!graph_part.empty()) graph_planning[graph_part] = cuda_conv_graph_planning_spent() - graph_part_start;
    graph_part = part, graph_part_start = cuda_conv_graph_planning_spent();
    const double grant = part == "conformance" && conformance_graph_budget >= 0 ? conformance_graph_budget : cudnn_graph_budget;
    if (grant >= 0 && !part.empty()) grant_cuda_conv_graph_planning(grant);
    report["cudnn_graph_planning_s"] = {
        {"per_part_budget", cudnn_graph_budget}, {"conformance_budget", conformance_graph_budget}, {"spent", graph_planning}};
  };
  write(0);
  std::printf("streamdet %s on %s\ncuda: runtime %s, driver %s\n", build_commit(), machine_summary().c_str(), info.runtime.c_str(),
              info.driver.c_str());
  // NVDEC first: it needs no backend and launches no kernel of ours (a fault elsewhere cannot hide it).
  // Here (--backend cpu) it runs too, to keep it working, and its verdict does not count.
  std::vector<std::string> nvdec_keys;
  for (const std::string& clip : nvdec_clips) {
    json row = nvdec_check(clip, device, on_gpu ? 5 : 1);
    if (on_gpu && info.problem.empty())  // a usable GPU: did NVDEC leave it an error?
      if (const Status dev = cuda_device_status(device); !dev) row["context"] = dev.error().message;
    const std::string codec = row.value("codec", "");
    const std::string key = codec == "h264" ? "nvdec" : codec.empty() ? "nvdec_" + std::to_string(nvdec_keys.size()) : "nvdec_" + codec;
    std::printf("%s: %s\n", key.c_str(), row.dump().c_str());
    report[key] = std::move(row);
    nvdec_keys.push_back(key);
    write(0);
  }
  Result<std::shared_ptr<const Backend>> gpu = std::shared_ptr<const Backend>();
  if (on_gpu) gpu = cuda_backend(device);
  if (!gpu) {
    std::printf("no GPU backend: %s\n", gpu.error().message.c_str());
    report["error"] = gpu.error().message;
    report["complete"] = true;
    return write(3);
  }
  const Backend& under_test = *gpu ? **gpu : *cpu_backend();
  report["backend"] = under_test.description();
  std::printf("%s\n\n%-14s %-5s %6s %6s %12s %12s  %s\n", under_test.description().c_str(), "op", "prec", "cases", "on it",
              "max abs err", "max rel err", "result");
  int failed = 0;
  std::string context_lost;  // "context lost after <op>": no more GPU work
  graph_planning_part("conformance");
  // Every op in fp32 (the CPU's tolerance) and in fp16 (the GPU's tensors in fp16: the fp16
  // tolerance, docs/gpu.md), one row each, the fp16 row right after the op's fp32 row.
  for (const auto& op : under_test.op_types()) {
    if (!only_ops.empty() && std::find(only_ops.begin(), only_ops.end(), op) == only_ops.end()) continue;
    if (!*gpu && !conformance::generators().count(op)) continue;  // the CPU's other ops: ONNX's node tests
    for (const bool fp16 : {false, true}) {
      const char* precision = fp16 ? "fp16" : "fp32";
      json row{{"op", op}, {"precision", precision}, {"pass", false}, {"error", nullptr}};
      if (!conformance::generators().count(op)) {
        std::printf("%-14s %-5s no random cases: FAIL\n", op.c_str(), precision);
        row["error"] = "no random cases";
      } else {
        const double atol = fp16 ? conformance::kFp16Atol : conformance::kFp32Atol, rtol = fp16 ? conformance::kFp16Rtol : conformance::kFp32Rtol;
        const auto r = conformance::check_op(backend_name, op, *gpu, cases, atol, rtol, fp16);
        // Each op's launches checked before the next op: a fault is this op's, not a later one's.
        const Status dev = on_gpu ? cuda_device_status(device) : ok();
        const bool pass = r.passed() && dev;
        std::printf("%-14s %-5s %6d %6d %12.3g %12.3g  %s\n", op.c_str(), precision, r.cases, r.ran_on_backend, r.max_abs_error,
                    r.max_rel_error, pass ? "ok" : ("FAIL " + (dev ? r.failure : dev.error().message)).c_str());
        row.update({{"pass", pass}, {"cases", r.cases}, {"ran_on_backend", r.ran_on_backend}, {"max_abs_error", r.max_abs_error},
                    {"max_rel_error", r.max_rel_error}, {"device_float", r.device_float}, {"atol", atol}, {"rtol", rtol}});
        if (!r.failure.empty()) row["error"] = r.failure;
        if (!dev) {
          row["error"] = dev.error().message;
          context_lost = "context lost after " + op + " (" + precision + ")";
        }
      }
      failed += !row["pass"].get<bool>();
      report["conformance"].push_back(row);
      if (!context_lost.empty()) report["context_lost"] = context_lost;
      write(1);
      if (!context_lost.empty()) break;
    }
    if (abort_after == op) std::abort();
    if (!context_lost.empty()) {
      std::printf("%s: no more GPU work\n", context_lost.c_str());
      break;
    }
  }
  graph_planning_part("models");
  for (size_t i = 0; i < model_paths.size() && context_lost.empty(); ++i) {
    ModelArg m{model_paths[i], Shape{1, 3, 640, 640}};
    if (i < inputs.size()) {
      auto s = parse_shape(inputs[i]);
      if (!s) return std::fprintf(stderr, "%s\n", s.error().message.c_str()), write(2);
      m.input = *s;
    }
    // Each model in fp32, then fp16 (the GPU's default precision).
    for (const bool fp16 : {false, true}) {
      if (!context_lost.empty()) break;
      json row = check_model(m, *gpu, iters, threads, fp16);
      if (on_gpu)
        if (const Status dev = cuda_device_status(device); !dev) {
          row["pass"] = false;
          row["error"] = dev.error().message;
          report["context_lost"] = context_lost = "context lost after " + m.path + (fp16 ? " (fp16)" : " (fp32)");
        }
      std::printf("\n%s %s %s: %s\n", m.path.c_str(), m.input.str().c_str(), fp16 ? "fp16" : "fp32", row.dump().c_str());
      if (!row["pass"].get<bool>()) ++failed;
      report["models"].push_back(row);
      write(1);
    }
  }
  if (!timing.model.empty() && context_lost.empty()) {
    auto dims = parse_shape(timing_input);
    if (!dims || dims->rank != 3) return std::fprintf(stderr, "--timing-input %s: expected CxHxW like 3x640x640\n", timing_input.c_str()), write(2);
    timing.channels = static_cast<int>((*dims)[0]), timing.height = static_cast<int>((*dims)[1]), timing.width = static_cast<int>((*dims)[2]);
    timing.threads = threads;
    graph_planning_part("timing");
    std::printf("\n");
    failed += gpu_check::run_timing(timing, *gpu, [&](const json& row) {
      report["timing"].push_back(row);
      write(1);
    });
    if (on_gpu)
      if (const Status dev = cuda_device_status(device); !dev) report["context_lost"] = context_lost = "context lost after timing";
  }
  if (!streams.streams.empty() && context_lost.empty()) {
    if (streams.model.empty()) streams.model = timing.model;
    auto dims = parse_shape(streams_input.empty() ? timing_input : streams_input);
    auto frame = parse_shape(stream_frame);
    if (!dims || dims->rank != 3 || !frame || frame->rank != 2)
      return std::fprintf(stderr, "--streams-input CxHxW, --stream-frame WxH: expected like 3x640x640 and 1920x1080\n"), write(2);
    streams.channels = static_cast<int>((*dims)[0]), streams.height = static_cast<int>((*dims)[1]), streams.width = static_cast<int>((*dims)[2]);
    streams.frame_width = static_cast<int>((*frame)[0]), streams.frame_height = static_cast<int>((*frame)[1]);
    streams.threads = on_gpu ? 1 : threads;
    streams.device = device;
    graph_planning_part("streams");
    std::printf("\n");
    if (streams.model.empty()) {
      for (int n : streams.streams) report["streams"].push_back({{"streams", n}, {"pass", false}, {"error", "no model: --streams-model or --timing"}});
      failed += static_cast<int>(streams.streams.size());
    } else {
      failed += gpu_check::run_streams(streams, *gpu, [&](const json& row) {
        report["streams"].push_back(row);
        write(1);
      });
    }
    if (on_gpu)
      if (const Status dev = cuda_device_status(device); !dev) report["context_lost"] = context_lost = "context lost after streams";
  }
  if (!e2e.clip.empty()) {
    json row;
    auto dims = parse_shape(timing_input);
    if (e2e.model.empty()) e2e.model = timing.model;
    if (!context_lost.empty()) {
      row = {{"pass", false}, {"error", "not run: " + context_lost}};
    } else if (e2e.model.empty() || !dims || dims->rank != 3) {
      row = {{"pass", false}, {"error", "no model (--nvdec-e2e-model or --timing) or no CxHxW --timing-input"}};
    } else {
      e2e.channels = static_cast<int>((*dims)[0]), e2e.height = static_cast<int>((*dims)[1]), e2e.width = static_cast<int>((*dims)[2]);
      e2e.device = device;
      e2e.threads = on_gpu ? 1 : threads;
      graph_planning_part("nvdec_e2e");
      row = gpu_check::nvdec_e2e(e2e, *gpu);
      if (on_gpu)
        if (const Status dev = cuda_device_status(device); !dev) {
          row["pass"] = false;
          row["error"] = dev.error().message;
          report["context_lost"] = context_lost = "context lost after nvdec_e2e";
        }
    }
    std::printf("\nnvdec_e2e: %s\n", row.dump().c_str());
    report["nvdec_e2e"] = row;
    // Counted on a GPU only: here (--backend cpu) there is no NVDEC, and the part says so.
    if (on_gpu && !row["pass"].get<bool>()) ++failed;
    write(1);
  }
  for (const auto& key : nvdec_keys)
    if (on_gpu && !report[key]["pass"].get<bool>()) ++failed;
  graph_planning_part("");
  report["failed"] = failed;
  report["complete"] = true;
  std::printf("\n%d failed\n", failed);
  return write(failed == 0 && context_lost.empty() ? 0 : 1);
}

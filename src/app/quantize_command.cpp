#include "app/quantize_command.h"

#include <chrono>
#include <cstdio>
#include <set>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "app/option_checks.h"
#include "core/log.h"
#include "engine/native/session.h"
#include "quantize/calibrator.h"
#include "quantize/qdq_rewrite.h"
#include "quantize/sensitivity.h"
#include "preprocess/letterbox.h"
#include "runtime/detector.h"
#include "runtime/worker_plan.h"
#include "runtime/interrupt.h"
#include "runtime/progress.h"
#include "sinks/atomic_file.h"
#include "sources/source.h"

namespace sd {

void add_quantize_options(CLI::App& cmd, QuantizeOptions& o, std::string& layout) {
  cmd.add_option("-m,--model", o.model.model, "the fp32 ONNX model")->required();
  cmd.add_option("--calib", o.calib, "calibration frames: a folder of images, an image, a glob or a video file")->required();
  cmd.add_option("-o,--out", o.out, "the quantized (QDQ) ONNX model to write")->required();
  cmd.add_option("--calib-frames", o.calib_frames, "calibrate on the first N frames (all if fewer)")
      ->capture_default_str()
      ->check(integer_in(1, 1000000, "frames"));
  cmd.add_option("--keep-float", o.keep_float,
                 "node names to keep in float besides the head's last convolutions, comma-separated")
      ->delimiter(',');
  cmd.add_option("--method", o.method,
                 "activation ranges: minmax (smallest/largest value seen) or percentile (0.01th/99.99th percentile "
                 "of each frame, averaged)")
      ->capture_default_str()
      ->check(CLI::IsMember({"minmax", "percentile"}));
  cmd.add_option("--keep-float-auto", o.keep_float_auto,
                 "sensitivity analysis: keep float at most N more nodes, the ones whose quantization alone costs "
                 "the outputs most (0: no analysis)")
      ->capture_default_str()
      ->check(integer_in(0, 1000000, "nodes"));
  cmd.add_option("--sensitivity-target", o.sensitivity_target,
                 "sensitivity analysis: keep nodes float until the outputs' relative squared error against fp32 is below this")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd.add_option("--sensitivity-frames", o.sensitivity_frames,
                 "sensitivity analysis: measured on the first N calibration frames")
      ->capture_default_str()
      ->check(integer_in(1, 1000000, "frames"));
  cmd.add_option("--threads", o.model.threads, "inference threads (0: every core)")->check(integer_in(0, kMaxThreads));
  cmd.add_option("--input-size", o.model.input_size,
                 "network input: auto (the model's own size; 640x640 for a dynamic model declaring none), W,H, or N")
      ->capture_default_str();
  cmd.add_option("--layout", layout, "output layout (picks the preprocessing): auto|yolov8|yolov5|yolov10|yolox|ssd|darknet")
      ->capture_default_str();
  cmd.add_option("--preprocess", o.model.preprocess, "override preprocessing, as for run (rgb|bgr, letterbox|stretch, scale=F, ...)")
      ->check(preprocess_overrides());
  cmd.add_flag("--reduce-range", o.reduce_range,
               "weights in 7 bits ([-63, 63], as ONNX Runtime's reduce_range): the model then runs in int8 on x86 processors "
               "without VNNI too (AVX2 only, AVX-512 before VNNI), where 8-bit weights leave it in float; costs some accuracy");
  cmd.add_option("--head", o.head,
                 "the head's last convolutions (those feeding an output with no Conv after them): int8-input (input and "
                 "weights int8, output float: no rounding of the predictions) or float (the whole convolution float)")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8-input", "float"}));
  cmd.add_flag("-q,--quiet", o.quiet, "no progress line on stderr");
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

Result<onnx::ModelProto> read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kModel, "cannot open model " + path);
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&in)) return fail(ErrorCode::kModel, path + ": not an ONNX model");
  return m;
}

}  // namespace

Status run_quantize(const QuantizeOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(o.out, ec) && fs::equivalent(o.out, o.model.model, ec))
    return fail(ErrorCode::kOutput, "--out " + o.out + " is the input model");
  SD_ASSIGN_OR_RETURN(onnx::ModelProto model, read_model(o.model.model));
  const std::optional<quant::HeadRule> head = quant::parse_head_rule(o.head);
  if (!head) return fail(ErrorCode::kUsage, "--head " + o.head + ": expected int8-input or float");
  SD_ASSIGN_OR_RETURN(quant::QuantPlan plan, quant::plan_quantization(model, o.keep_float, o.model.model, *head));
  plan.reduce_range = o.reduce_range;
  if (plan.quantized.empty()) return fail(ErrorCode::kModel, o.model.model + ": no Conv or MatMul with constant float weights to quantize");
  SD_TRY(AtomicFile::create(o.out, "quantized model"));  // an unwritable path fails before the work

  // The detector as `run` and `val` load it: its input size and preprocessing.
  ModelOptions mo = o.model;
  mo.engine = "native";
  mo.device = "cpu";
  SD_ASSIGN_OR_RETURN(Detector det, load_detector(mo, cv::Size()));
  const int threads = o.model.threads > 0 ? o.model.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string base_dir = fs::path(o.model.model).parent_path().string();
  SD_ASSIGN_OR_RETURN(std::unique_ptr<quant::Calibrator> calibrator,
                      quant::Calibrator::create(model, base_dir, plan.activations,
                                                o.method == "percentile" ? quant::RangeMethod::kPercentile : quant::RangeMethod::kMinMax,
                                                threads));
  SD_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, open_source(o.calib, SourceOptions{}));
  native::HostTensor input(native::DType::kFloat32, Shape{1, 3, det.input_size.height, det.input_size.width});
  PreprocessScratch scratch;
  ProgressLine progress(!o.quiet);
  Frame frame;
  std::vector<native::HostTensor> sensitivity_inputs;  // the first frames, for the analysis
  const int64_t total = source->info().frame_count > 0 ? std::min(o.calib_frames, source->info().frame_count) : o.calib_frames;
  while (calibrator->inputs_seen() < o.calib_frames) {
    if (interrupt_requested()) return fail(ErrorCode::kInterrupted, "interrupted");
    auto more = source->read(frame);
    if (!more) {
      if (more.error().code == ErrorCode::kCorruptFrame) continue;
      return fail(ErrorCode::kSource, more.error().message);
    }
    if (!*more) break;
    preprocess_frame(frame, det.input_size, det.preprocess, input.as<float>(), scratch);
    SD_TRY(calibrator->observe(input.ref()));
    if (o.keep_float_auto > 0 && static_cast<int64_t>(sensitivity_inputs.size()) < o.sensitivity_frames)
      sensitivity_inputs.push_back(input.clone());
    progress.update(calibrator->inputs_seen(), total);
  }
  progress.finish();
  if (calibrator->inputs_seen() == 0) return fail(ErrorCode::kSource, "--calib " + o.calib + ": no frames to calibrate on");

  const std::map<std::string, quant::Range> ranges = calibrator->ranges();
  quant::SensitivityReport sensitivity;
  double sensitivity_seconds = 0;
  if (o.keep_float_auto > 0) {
    quant::SensitivityOptions so;
    so.max_float = o.keep_float_auto;
    so.target = o.sensitivity_target;
    so.threads = threads;
    const auto t0 = std::chrono::steady_clock::now();
    SD_ASSIGN_OR_RETURN(sensitivity, quant::analyze_sensitivity(model, base_dir, plan, ranges, sensitivity_inputs, so,
                                                                o.model.model));
    sensitivity_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::set<int> kept;
    for (const auto& k : sensitivity.kept) kept.insert(k.node);
    std::vector<int> nodes;
    for (int i : plan.quantized)
      if (!kept.count(i)) nodes.push_back(i);
    plan = quant::restrict_plan(model, plan, nodes);
  }
  SD_ASSIGN_OR_RETURN(onnx::ModelProto qdq, quant::write_qdq(model, plan, ranges, o.model.model));
  SD_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(o.out, "quantized model"));
  {
    std::ofstream f(file.write_path(), std::ios::binary | std::ios::trunc);
    if (!qdq.SerializeToOstream(&f) || !f.flush()) return fail(ErrorCode::kOutput, "failed writing " + o.out);
  }
  SD_TRY(file.commit());
  // What we wrote must load in our own engine (and fold): a bug here is ours, not the user's.
  if (auto m = native::NativeModel::load(o.out); !m)
    return fail(ErrorCode::kInternal, o.out + " was written but does not load: " + m.error().message);

  std::printf("quantized %zu of %zu Conv/MatMul nodes (weights int8%s %s, activations uint8 per tensor, %s ranges over %d frames)%s\n",
              plan.quantized.size(),
              plan.quantized.size() + plan.kept_by_rule.size() + plan.kept_by_option.size() + sensitivity.kept.size(),
              plan.reduce_range ? " in 7 bits" : "", plan.per_channel ? "per channel" : "per tensor", o.method.c_str(), calibrator->inputs_seen(),
              plan.upgrade_opset ? "; opset raised to 13 for per-channel weights" : "");
  if (!plan.float_output.empty()) {
    std::vector<std::string> names;
    for (int i : plan.float_output) names.push_back(quant::node_label(model.graph().node(i)));
    std::printf("int8 input, float output (feed the outputs with no Conv after them; --head float keeps them float): %s\n",
                joined(names).c_str());
  }
  if (!plan.kept_by_rule.empty()) std::printf("kept float (feed the outputs with no Conv after them): %s\n", joined(plan.kept_by_rule).c_str());
  if (!plan.kept_by_option.empty()) std::printf("kept float (--keep-float): %s\n", joined(plan.kept_by_option).c_str());
  if (o.keep_float_auto > 0 && !o.quiet) {
    // Scores: the outputs' relative squared error against fp32 with that node alone quantized.
    for (const auto& k : sensitivity.kept)
      std::printf("kept float (sensitivity): %s, error %.3g with it alone int8\n", k.label.c_str(), k.score);
    std::printf("sensitivity analysis: %zu nodes scored on %zu frames in %.1f s; output error %.3g with all int8, "
                "%.3g as written (target %.3g%s)\n",
                sensitivity.scores.size(), sensitivity_inputs.size(), sensitivity_seconds, sensitivity.error_all,
                sensitivity.error_final, o.sensitivity_target,
                sensitivity.error_final > o.sensitivity_target ? ", not met within --keep-float-auto" : "");
  }
  if (!plan.per_channel)
    log_warn("%s: opset below 13 with ops that change meaning at 13: weights quantized per tensor", o.model.model.c_str());
  std::printf("wrote %s\n", o.out.c_str());
  return ok();
}

}  // namespace sd

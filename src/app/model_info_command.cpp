#include "app/model_info_command.h"

#include <cstdio>
#include <map>

#include "app/option_checks.h"
#include "core/cpu_isa.h"
#include "core/human_bytes.h"
#include "engine/engine_registry.h"
#include "engine/native/backend.h"
#include "engine/native/cpu/bf16_support.h"
#include "engine/native/device.h"
#include "engine/native/session.h"
#include "model/model_info.h"
#include "runtime/detector.h"
#include "runtime/worker_plan.h"

namespace sd {
namespace {

void print_io(const char* what, const std::vector<TensorInfo>& tensors) {
  for (const auto& t : tensors) std::printf("%-9s %s %s\n", what, t.name.c_str(), t.shape.str().c_str());
}

}  // namespace

void add_model_info_options(CLI::App& cmd, ModelInfoOptions& options) {
  cmd.add_option("-m,--model", options.model, "ONNX model (.onnx) or Darknet config (.cfg)")->required();
  cmd.add_option("--input-size", options.input_size, "plan for this input: auto (the model's size, or 640x640 when dynamic), W,H, or N")
      ->capture_default_str();
  cmd.add_option("--batch", options.batch, "plan for this batch")->capture_default_str()->check(integer_in(1, kMaxBatch));
  cmd.add_option("--threads", options.threads, "CPU threads the plan is made for")->capture_default_str()->check(integer_in(1, kMaxThreads));
  cmd.add_option("--device", options.device, "plan for this device: auto, cpu, cuda, cuda:N (as run's --device)")->capture_default_str();
  cmd.add_option("--precision", options.precision, "plan in this precision: auto, fp32, fp16, bf16 (as run's --precision)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fp32", "fp16", "bf16"}));
  cmd.add_option("--cuda-graphs", options.cuda_graphs, "plan with CUDA graphs on or off (as run's --cuda-graphs)")
      ->default_str("on")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_flag("--steps", options.steps, "list every step of the plan in order, with its backend and implementation");
  // As run's and bench's: process-wide, applied while the options are parsed (before oneDNN's
  // first primitive), so that the plan shows the kernels of that ISA path.
  cmd.add_option_function<std::string>(
         "--cpu-isa", [](const std::string& text) { (void)cpu::cap_isa(*cpu::parse_isa(text)); },
         "plan with the CPU kernels of this instruction set at most (as run's --cpu-isa): sse4.2|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16")
      ->check(CLI::IsMember({"sse4.2", "avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_bf16"}));
}

Status run_model_info(const ModelInfoOptions& options) {
  SD_ASSIGN_OR_RETURN(ModelInfo info, inspect_model(options.model));
  if (info.format == ModelFormat::kDarknet) {
    std::printf("model     %s (Darknet, runs on OpenCV DNN: no native plan)\n", options.model.c_str());
    std::printf("input     [%d, %d, %d, %d]\n", options.batch, info.darknet->channels, info.darknet->height, info.darknet->width);
    return ok();
  }
  SD_ASSIGN_OR_RETURN(auto engine, load_engine("native", info));
  SD_ASSIGN_OR_RETURN(cv::Size size, resolve_input_size(options.input_size, *engine, info, cv::Size()));
  SD_ASSIGN_OR_RETURN(auto device, native::backend_for_device(options.device));
  native::LoadOptions load;
  const bool on_cuda = device && device->device().kind == native::DeviceKind::kCuda;
  SD_ASSIGN_OR_RETURN(load.precision, native::resolve_precision(options.precision, native::cpu_has_bf16(), on_cuda));
  SD_ASSIGN_OR_RETURN(auto model, native::NativeModel::load(options.model, load));
  native::SessionOptions so;
  so.threads = options.threads;
  so.cuda_graphs = options.cuda_graphs;
  if (device) so.backends = {device};
  so.device_fp16 = load.precision == native::Precision::kFp16;
  SD_ASSIGN_OR_RETURN(auto session, native::NativeSession::create(model, so));
  const Shape input{options.batch, 3, size.height, size.width};
  auto summary = session->plan_summary({input});
  if (!summary) return tl::unexpected(with_context(summary.error(), options.model));

  std::printf("model     %s (ONNX opset %d, %zu nodes after the passes)\n", options.model.c_str(), model->graph().opset,
              model->graph().nodes.size());
  print_io("input", engine->inputs());
  print_io("output", engine->outputs());
  int kernels = 0;
  for (const auto& b : summary->backends) kernels += b.steps;
  std::printf("plan      for %s: %d steps, %d copies between backends per run\n", input.str().c_str(), kernels, summary->copies);
  // Whether the GPU's steps are replayed as one CUDA graph, or why not ("none: Floor node ... runs on cpu").
  std::printf("graph     %s\n", summary->graph.c_str());
  std::printf("%-9s %6s %10s %10s  %-14s %s\n", "backend", "steps", "arena", "scratch", "prefers", "what");
  for (const auto& b : summary->backends)
    std::printf("%-9s %6d %10s %10s  %-14s %s\n", b.name.c_str(), b.steps, human_bytes(b.arena_bytes).c_str(),
                human_bytes(b.scratch_bytes).c_str(), (b.layout + " " + b.precision).c_str(), b.description.c_str());
  // Op types per backend: "cpu: Conv 57, Concat 19, ...".
  std::map<std::string, std::map<std::string, int>> ops;
  for (const auto& st : summary->steps) {
    if (st.copy) continue;
    // "Conv node 'x' (opset 17)" counts as Conv; the planner's own steps by their label.
    const auto node = st.label.find(" node '");
    ++ops[st.backend][node == std::string::npos ? "(" + st.label + ")" : st.label.substr(0, node)];
  }
  for (const auto& [backend, counts] : ops) {
    std::string line;
    for (const auto& [op, n] : counts) line += (line.empty() ? "" : ", ") + op + " " + std::to_string(n);
    std::printf("%-9s %s\n", (backend + ":").c_str(), line.c_str());
  }
  if (options.steps)
    for (size_t i = 0; i < summary->steps.size(); ++i) {
      const auto& st = summary->steps[i];
      std::printf("%4zu  %-6s %s%s\n", i + 1, st.backend.c_str(), st.label.c_str(),
                  st.implementation.empty() ? "" : (" [" + st.implementation + "]").c_str());
    }
  return ok();
}

}  // namespace sd

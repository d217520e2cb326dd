#include "app/cli.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/bench_command.h"
#include "app/model_info_command.h"
#include "app/publish_command.h"
#include "app/run_command_options.h"
#include "app/quantize_command.h"
#include "app/val_command.h"
#include "app/option_checks.h"
#include "core/build_info.h"
#include "core/cpu_isa.h"
#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/cuda/nvdec_decoder.h"
#include "core/memory_budget.h"
#include "runtime/worker_plan.h"
#include "core/error.h"
#include "core/log.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "runtime/tracking.h"

namespace sd {

namespace {

int report_error(const Error& e) {
  log_error("%s", e.message.c_str());
  return exit_code_for(e.code);
}

int run_command(RunOptions& options) {
  set_log_quiet(options.quiet);
  set_log_verbose(options.verbose);
  options.redis_password = redis_password_from_environment();
  install_interrupt_handler();
  RunOutcome outcome = run_detection(options);
  if (outcome.started && !options.quiet) std::fprintf(stderr, "%s", format_profile(outcome.profile).c_str());
  if (!outcome.status && outcome.status.error().code == ErrorCode::kDamagedSource) {
    // The run finished and its outputs are complete: a warning, with its own exit code.
    log_warn("%s", outcome.status.error().message.c_str());
    return exit_code::kDamagedSource;
  }
  if (!outcome.status) return report_error(outcome.status.error());
  return exit_code::kOk;
}

}  // namespace

// --version: the build, and the backends it can run on here.
std::string version_text() {
  std::string text = std::string("streamdet ") + STREAMDET_VERSION + " (commit " + build_commit() + ")\n";
  text += "cpu: " + native::cpu_backend()->description() + "\n";
  text += std::string("cpu isa: ") + cpu::isa_summary() + " (the rest of the build: " + cpu::build_baseline() + ")\n";
  const native::CudaInfo cuda = native::cuda_info();
  if (!cuda.built) return text + "cuda: not built (no CUDA toolkit when streamdet was built): CPU only\nnvdec: " + native::cuda::nvdec_summary();
  text += "cuda: built with CUDA runtime " + cuda.runtime + (cuda.driver.empty() ? ", no driver" : ", driver CUDA " + cuda.driver);
  for (const auto& d : cuda.devices) text += "\n  " + d;
  if (!cuda.problem.empty()) text += "\n  " + cuda.problem + ": the GPU backend is not used";
  text += "\ncudnn: " + cuda.cudnn;
  text += "\nnvdec: " + native::cuda::nvdec_summary();
  return text;
}

int cli_main(int argc, char** argv) {
  CLI::App app{"streamdet: real-time object detection for video, with the profile built in"};
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 internal error, 2 usage, 3 model, 4 source, 5 output, 6 unsupported, 7 damaged source,\n"
      "130 interrupted; docs/errors.md explains each and what is kept when a run fails.\n"
      "Run 'streamdet <command> --help' for a command's options.");

  RunFlags run_flags;
  CLI::App* run_cmd = app.add_subcommand("run", "detect objects in a source; write annotated video, JSONL and a profile");
  add_run_options(*run_cmd, run_flags);

  BenchOptions bench;
  std::string bench_layout = "auto";
  CLI::App* bench_cmd = app.add_subcommand("bench", "time the engine alone (warm-up, then N iterations)");
  add_model_options(*bench_cmd, bench.model, bench_layout);
  add_bench_options(*bench_cmd, bench);

  PublishOptions publish;
  CLI::App* publish_cmd = app.add_subcommand("publish", "stream a video or camera into a Redis stream, one frame per entry");
  add_publish_options(*publish_cmd, publish);

  ModelInfoOptions model_info;
  CLI::App* info_cmd = app.add_subcommand("model-info", "show a model's inputs and outputs and where the native engine runs each node");
  add_model_info_options(*info_cmd, model_info);

  ValOptions val;
  std::string val_layout = "auto";
  set_val_defaults(val);
  CLI::App* val_cmd = app.add_subcommand("val", "measure a detector's accuracy on a COCO or YOLO dataset (pycocotools' mAP)");
  add_model_options(*val_cmd, val.model, val_layout);
  // val runs every image at one size, not each image's own.
  val_cmd->get_option("--input-size")
      ->description("network input: auto (the model's own size; 640x640 for a dynamic model declaring none), W,H, or N for NxN");
  add_val_options(*val_cmd, val);

  QuantizeOptions quantize;
  std::string quantize_layout = "auto";
  CLI::App* quantize_cmd =
      app.add_subcommand("quantize", "write an int8 (QDQ) copy of an fp32 ONNX model, calibrated on images or a video");
  add_quantize_options(*quantize_cmd, quantize, quantize_layout);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    log_error("%s (see 'streamdet --help')", e.what());
    return exit_code::kUsage;
  }

  // Errors are values on every path we know of; an exception reaching here is a library failing
  // in a way we did not foresee: one line and exit 1 (memory: the budget checks missed a case),
  // never std::terminate's abort.
  try {
    if (run_cmd->parsed()) {
      if (auto st = resolve_run_flags(run_flags); !st) return report_error(st.error());
      return run_command(run_flags.run);
    }
    if (publish_cmd->parsed()) {
      publish.redis_password = redis_password_from_environment();
      install_interrupt_handler();
      auto st = run_publish(publish);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (info_cmd->parsed()) {
      auto st = run_model_info(model_info);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (val_cmd->parsed()) {
      if (auto st = resolve_layout(val_layout, val.model); !st) return report_error(st.error());
      install_interrupt_handler();
      auto st = run_val(val);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (quantize_cmd->parsed()) {
      if (auto st = resolve_layout(quantize_layout, quantize.model); !st) return report_error(st.error());
      install_interrupt_handler();
      auto st = run_quantize(quantize);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (bench_cmd->parsed()) {
      if (auto st = resolve_layout(bench_layout, bench.model); !st) return report_error(st.error());
      auto st = run_bench(bench);
      return st ? exit_code::kOk : report_error(st.error());
    }
  } catch (const std::bad_alloc&) {
    log_error("out of memory (a size the memory checks did not foresee: lower --input-size or --max-memory, and please report it)");
    return exit_code::kInternal;
  } catch (const std::exception& e) {
    log_error("internal error: %s (please report it)", e.what());
    return exit_code::kInternal;
  }
  return exit_code::kUsage;
}

}  // namespace sd

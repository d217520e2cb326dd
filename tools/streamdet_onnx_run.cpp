// Runs an ONNX model once in the native engine (and optionally OpenCV DNN) and dumps the first
// output as raw float32: the counterpart of ../shared/tools/ort-bench --dump for parity checks.
//   streamdet_onnx_run MODEL.onnx --shape 1x3x640x640 [--input in.f32] [--dump out.f32] [--compare ref.f32]
//                      [--precision fp32|bf16] [--conv3x3 measured|onednn|winograd|winograd6] [--conv-candidate N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "engine/native/conv_choice.h"
#include "engine/native/cpu/bf16_support.h"
#include "engine/native/precision.h"
#include "engine/native/session.h"

using namespace sd;
using namespace sd::native;

int main(int argc, char** argv) {
  CLI::App app{"run an ONNX model in the native engine; dump or compare its first output"};
  std::string model, shape_text = "1x3x640x640", input, dump, compare, precision = "fp32", conv3x3 = "measured";
  int threads = 1, conv_candidate = kTimedCandidate, runs = 2;
  bool no_optimize = false;
  app.add_option("model", model)->required();
  app.add_option("--shape", shape_text);
  app.add_option("--input", input, "raw float32 input (default: every value 0.5, as ort-bench)");
  app.add_option("--dump", dump, "write the first output as raw float32");
  app.add_option("--compare", compare, "raw float32 reference of the first output (e.g. from ort-bench --dump)");
  app.add_option("--threads", threads);
  app.add_flag("--no-optimize", no_optimize, "skip the graph passes");
  app.add_option("--precision", precision, "fp32 or bf16 (as run's --precision)")->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--conv3x3", conv3x3, "the 3x3 stride-1 convolutions: timed choice, oneDNN's, our Winograd (F(4x4, 3x3)), or "
                 "our F(6x6, 3x3) where it applies")
      ->check(CLI::IsMember({"measured", "onednn", "winograd", "winograd6"}));
  app.add_option("--runs", runs, "runs in all, the first planning; the median of the others is printed (default 2)")->check(CLI::PositiveNumber);
  app.add_option("--conv-candidate", conv_candidate,
                 "oneDNN's int8 implementations, bf16 (0) or float32 (1) under bf16: -1 timed at load, else the index (conv_choice.h)");
  CLI11_PARSE(app, argc, argv);
  std::vector<int64_t> dims;
  std::stringstream ss(shape_text);
  for (std::string d; std::getline(ss, d, 'x');) dims.push_back(std::stoll(d));
  Shape shape = Shape::from(dims.begin(), dims.end());
  LoadOptions lo;
  lo.optimize = !no_optimize;
  auto p = resolve_precision(precision, cpu_has_bf16());
  if (!p) return std::fprintf(stderr, "%s\n", p.error().message.c_str()), 2;
  lo.precision = *p;
  lo.conv3x3 = conv3x3 == "onednn"      ? Conv3x3Choice::kOneDnn
               : conv3x3 == "winograd"  ? Conv3x3Choice::kWinograd
               : conv3x3 == "winograd6" ? Conv3x3Choice::kWinograd6x6
                                        : Conv3x3Choice::kMeasured;
  lo.conv_candidate = conv_candidate;
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  auto t_load = Clock::now();
  auto m = NativeModel::load(model, lo);
  const double load_ms = ms_since(t_load);
  if (!m) return std::fprintf(stderr, "%s\n", m.error().message.c_str()), 3;
  HostTensor in(DType::kFloat32, shape);
  if (!input.empty()) {
    std::ifstream f(input, std::ios::binary);
    f.read(static_cast<char*>(in.data()), static_cast<std::streamsize>(in.bytes()));
    if (!f) return std::fprintf(stderr, "cannot read %zu bytes from %s\n", in.bytes(), input.c_str()), 2;
  } else {
    for (int64_t i = 0; i < in.numel(); ++i) in.as<float>()[i] = 0.5f;
  }
  auto t_session = Clock::now();
  auto s = NativeSession::create(*m, SessionOptions{threads});
  const double session_ms = ms_since(t_session);
  std::vector<HostTensor> out;
  TensorRef ref = in.ref();
  auto t_first = Clock::now();
  if (auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), out); !st) return std::fprintf(stderr, "%s\n", st.error().message.c_str()), 1;
  const double first_ms = ms_since(t_first);
  std::vector<double> steady;
  for (int r = 1; r < std::max(2, runs); ++r) {
    auto t_second = Clock::now();
    if (auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), out); !st) return std::fprintf(stderr, "%s\n", st.error().message.c_str()), 1;
    steady.push_back(ms_since(t_second));
  }
  std::nth_element(steady.begin(), steady.begin() + static_cast<std::ptrdiff_t>(steady.size() / 2), steady.end());
  const double second_ms = steady[steady.size() / 2];
  std::printf("output 0: %s\n", out[0].shape().str().c_str());
  // The first run plans for the input shape (layouts, arena, oneDNN primitives); the second is steady state.
  std::printf("load %.1f ms (parse + passes), session %.1f ms, first run %.1f ms (plan + run), %s %.2f ms\n", load_ms,
              session_ms, first_ms, steady.size() > 1 ? "median of the later runs" : "second run", second_ms);
  if (!dump.empty()) std::ofstream(dump, std::ios::binary).write(static_cast<const char*>(out[0].data()), static_cast<std::streamsize>(out[0].bytes()));
  if (!compare.empty()) {
    std::ifstream f(compare, std::ios::binary);
    std::vector<float> r(static_cast<size_t>(out[0].numel()));
    f.read(reinterpret_cast<char*>(r.data()), static_cast<std::streamsize>(r.size() * 4));
    if (!f) return std::fprintf(stderr, "reference %s is shorter than the output\n", compare.c_str()), 2;
    double max_abs = 0, max_rel = 0, ref_max = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      double a = out[0].as<float>()[i], b = r[i];
      max_abs = std::max(max_abs, std::fabs(a - b));
      max_rel = std::max(max_rel, std::fabs(a - b) / std::max(std::fabs(b), 1e-3));
      ref_max = std::max(ref_max, std::fabs(b));
    }
    std::printf("vs %s: max abs diff %.3g (reference max |x| %.3g), max rel diff %.3g (|ref| floored at 1e-3)\n", compare.c_str(), max_abs, ref_max, max_rel);
  }
  return 0;
}

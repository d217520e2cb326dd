#include "gpu_check_streams.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "engine/native/cuda/gpu_detect_output.h"
#include "engine/native/cuda/gpu_frame_staging.h"
#include "engine/native/gpu_busy.h"
#include "engine/native/session.h"
#include "gpu_frames_vectors.h"  // the plain reference letterbox the fast one is held to
#include "postprocess/detection_parity.h"
#include "postprocess/nms.h"

namespace sd::gpu_check {
namespace {

using nlohmann::json;
using namespace sd::native;
using sd::native::cuda::InputPlacement;
using namespace sd::test::gpu_frames;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// A few distinct synthetic BGR frames, made once: gradients and noise (tests/gpu_frames_vectors.h)
// with a bright square moved per frame, so that consecutive frames differ.
std::vector<std::vector<uint8_t>> make_frames(int w, int h, int count) {
  std::vector<std::vector<uint8_t>> frames;
  for (int f = 0; f < count; ++f) {
    std::vector<uint8_t> v = random_bytes(w, h, 3, 100u + static_cast<uint32_t>(f));
    const int side = std::max(1, h / 4), x0 = (w - side) * f / std::max(1, count), y0 = h / 3;
    for (int y = y0; y < std::min(h, y0 + side); ++y)
      for (int x = x0; x < std::min(w, x0 + side); ++x)
        for (int c = 0; c < 3; ++c) v[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(230 - 40 * c);
    frames.push_back(std::move(v));
  }
  return frames;
}

// The letterbox of tests/gpu_frames_vectors.h's reference_letterbox_bgr (which is the GPU
// kernel's and the CPU path's arithmetic), with the taps computed once per geometry and written
// straight into the destination: bit for bit the reference's output (checked once per row).
class HostLetterbox {
 public:
  HostLetterbox(int w, int h, const InputPlacement& p) : w_(w), h_(h), p_(p) {
    const double sx = static_cast<double>(w) / p.content_width, sy = static_cast<double>(h) / p.content_height;
    unscaled_ = w == p.content_width && h == p.content_height;
    for (int x = 0; x < p.content_width; ++x) xs_.push_back(tap(x, sx, w));
    for (int y = 0; y < p.content_height; ++y) ys_.push_back(tap(y, sy, h));
  }
  void run(const uint8_t* bgr, float* out) const {
    const size_t plane = static_cast<size_t>(p_.dst_width) * p_.dst_height;
    const int64_t pitch = 3 * static_cast<int64_t>(w_);
    for (int y = 0; y < p_.dst_height; ++y) {
      float* rows[3] = {out + static_cast<size_t>(y) * p_.dst_width, out + plane + static_cast<size_t>(y) * p_.dst_width,
                        out + 2 * plane + static_cast<size_t>(y) * p_.dst_width};
      const int cy = y - p_.y0;
      for (int x = 0; x < p_.dst_width; ++x) {
        const int cx = x - p_.x0;
        if (cx < 0 || cy < 0 || cx >= p_.content_width || cy >= p_.content_height) {
          for (int c = 0; c < 3; ++c) rows[c][x] = p_.pad[c];
          continue;
        }
        float px[3];
        for (int c = 0; c < 3; ++c)
          px[c] = unscaled_ ? bgr[(static_cast<size_t>(cy) * w_ + cx) * 3 + c]
                            : sample(bgr + c, pitch, 3, xs_[static_cast<size_t>(cx)], ys_[static_cast<size_t>(cy)]);
        for (int c = 0; c < 3; ++c) rows[c][x] = px[p_.src_channel[c]] * p_.mul[c] + p_.add[c];
      }
    }
  }

 private:
  int w_, h_;
  InputPlacement p_;
  bool unscaled_ = false;
  std::vector<Tap> xs_, ys_;
};

// One image of a YOLOv8 head [4 + classes, anchors]: best class per anchor above conf, then
// class-aware NMS (decode_yolov8_plain's rule, into the worker's own buffers).
void decode_yolov8(const float* out, int64_t channels, int64_t anchors, float conf, float iou, Nms& nms, Detections& dets) {
  dets.clear();
  const int64_t classes = channels - 4;
  for (int64_t a = 0; a < anchors; ++a) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (out[(4 + c) * anchors + a] > out[(4 + best) * anchors + a]) best = c;
    const float score = out[(4 + best) * anchors + a];
    if (!(score >= conf)) continue;
    const float cx = out[a], cy = out[anchors + a], w = out[2 * anchors + a], h = out[3 * anchors + a];
    dets.push_back(Detection{cx - 0.5f * w, cy - 0.5f * h, cx + 0.5f * w, cy + 0.5f * h, score, static_cast<int>(best)});
  }
  NmsOptions options;
  options.iou_threshold = iou;
  nms.run(dets, options);
}

struct Worker {
  std::unique_ptr<NativeSession> session;
  float* staged = nullptr;  // the session's page-locked input (or `own` where it has none)
  HostTensor own;
  TensorRef input;
  std::vector<HostTensor> outputs;
  Nms nms;
  Detections dets;
  // The GPU rows' way (a GPU only): the frame uploaded and letterboxed by the kernel
  // (--preprocess-on gpu's GpuFrameInput), the head decoded + NMS'd on the device
  // (--postprocess-on gpu's GpuDetectOutput), only the kept boxes back.
  std::unique_ptr<GpuFrameInput> gpu_input;
  std::unique_ptr<GpuDetectOutput> gpu_detect;
  std::vector<Tensor> gpu_outputs;
  std::vector<double> ms;
  int64_t frames = 0, boxes = 0;
  std::string error;
};

struct Setup {
  std::shared_ptr<const NativeModel> model;
  std::shared_ptr<const Backend> gpu;
  Shape input;
};

// M sessions with their staging; the first runs (planning, cuDNN's probes, the graph's recording)
// done. `streams_created`: the backend's streams made meanwhile (one per session on a GPU).
Result<std::vector<Worker>> make_workers(const StreamsOptions& o, const Setup& s, uint64_t& streams_created) {
  SessionOptions so;
  so.threads = o.threads;
  if (s.gpu) so.backends = {s.gpu}, so.device_fp16 = true;  // fp16, the GPU's default precision
  const Backend& counted = s.gpu ? *s.gpu : *cpu_backend();
  const uint64_t before = counted.counters().streams;
  std::vector<Worker> workers(static_cast<size_t>(std::max(1, o.workers)));
  const size_t bytes = static_cast<size_t>(s.input.numel()) * sizeof(float);
  for (Worker& w : workers) {
    auto session = NativeSession::create(s.model, so);
    if (!session) return tl::unexpected(session.error());
    w.session = std::move(*session);
    auto staging = w.session->input_staging(0, bytes);
    if (!staging) return tl::unexpected(staging.error());
    if (*staging) {
      w.staged = static_cast<float*>(*staging);
      std::memset(w.staged, 0, bytes);
    } else {
      w.own = HostTensor(DType::kFloat32, s.input);
      w.staged = w.own.as<float>();
    }
    w.input = TensorRef(DType::kFloat32, s.input, w.staged);
    for (int i = 0; i < 3; ++i)
      if (auto st = w.session->run(std::span<const TensorRef>(&w.input, 1), w.outputs); !st) return tl::unexpected(st.error());
    if (s.gpu) {
      w.gpu_input = make_cuda_frame_input(*w.session, o.device, s.gpu->name());
      w.gpu_detect = make_cuda_detect_output(*w.session, o.device, s.gpu->name());
    }
  }
  streams_created = counted.counters().streams - before;
  return workers;
}

// The M workers for `seconds`, each calling `frame(worker)` until then; the wall time.
template <class Frame>
double run_workers(std::vector<Worker>& workers, double seconds, Frame frame) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  const auto limit = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  Clock::time_point t0;
  std::vector<std::thread> threads;
  for (Worker& w : workers)
    threads.emplace_back([&, wp = &w] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      while (Clock::now() - t0 < limit && wp->error.empty()) frame(*wp);
    });
  while (ready.load() < static_cast<int>(workers.size())) std::this_thread::yield();
  t0 = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  return ms_since(t0);
}

GpuDetectHead gpu_head(const Shape& head) {
  GpuDetectHead h;
  h.kind = GpuDetectHead::Kind::kYoloV8;
  h.output = 0;
  h.num_classes = static_cast<int>(head[1] - 4);
  return h;
}

GpuDetectParams gpu_params(const StreamsOptions& o) {
  GpuDetectParams p;
  p.conf_threshold = o.conf;
  p.iou_threshold = o.iou;
  return p;
}

// What a row's frames go through around the engine, as its "preprocess" and "postprocess" say.
struct FrameWay {
  std::string preprocess, postprocess;
};
const FrameWay kHostWay{"host letterbox into the session's input staging", "cpu decode + nms"};

json skipped(const StreamsOptions& o, int n, const std::string& why, const FrameWay& way = kHostWay) {
  return json{{"streams", n}, {"workers", o.workers}, {"pass", false}, {"error", why}, {"skipped", true},
              {"preprocess", way.preprocess}, {"postprocess", way.postprocess}};
}

// One row's measurement: `n` streams for row_seconds on the workers, `frame(worker, bgr)` doing one
// frame's work (false: it failed, the worker's error says why); the figures into `row`, its
// "error" set where it failed.
template <class FrameWork>
void measure_row(json& row, const StreamsOptions& o, int n, bool gpu, std::vector<Worker>& workers, uint64_t streams_created,
                 double engine_fps, const std::vector<std::vector<uint8_t>>& frames, FrameWork frame) {
  for (Worker& w : workers) w.ms.clear(), w.frames = 0, w.boxes = 0;
  row["backend_streams_created"] = streams_created;  // one per worker's session on a GPU
  // One CUDA stream per worker: each session makes its own (the CPU backend counts none).
  row["stream_per_worker"] = gpu ? json(streams_created >= workers.size()) : json(nullptr);
  // Frames are dealt out by one counter: ticket t is stream t % n's (t / n)-th frame, which
  // shows that stream's distinct frames in turn (the producers, with no thread of their own).
  std::atomic<int64_t> ticket{0};
  std::unique_ptr<GpuBusySampler> sampler;
  std::string busy_note;
  if (gpu) {
    auto s = GpuBusySampler::start_nvml(static_cast<unsigned>(o.device));
    if (s) sampler = std::move(*s);
    else busy_note = s.error().message;
  } else {
    busy_note = "no GPU (the CPU path)";
  }
  const int64_t distinct = static_cast<int64_t>(frames.size());
  const double wall = run_workers(workers, o.row_seconds, [&](Worker& w) {
    const int64_t t = ticket.fetch_add(1);
    const int64_t stream = t % n, k = t / n;
    const uint8_t* bgr = frames[static_cast<size_t>((k + stream) % distinct)].data();
    const auto t0 = Clock::now();
    if (!frame(w, bgr)) return;
    w.ms.push_back(ms_since(t0));
    ++w.frames;
    w.boxes += static_cast<int64_t>(w.dets.size());
  });
  std::optional<GpuBusySummary> busy;
  if (sampler) {
    busy = sampler->stop();
    if (!sampler->error().empty()) busy_note = sampler->error();
  }
  std::vector<double> ms;
  int64_t total = 0, boxes = 0;
  std::string error;
  for (const Worker& w : workers) {
    ms.insert(ms.end(), w.ms.begin(), w.ms.end());
    total += w.frames;
    boxes += w.boxes;
    if (!w.error.empty()) error = w.error;
  }
  const double fps = wall > 0 ? total * 1000.0 / wall : 0.0;
  const double per_stream = fps / n;
  row["frames"] = total;
  row["fps"] = fps;
  row["per_stream_fps"] = per_stream;
  row["realtime"] = per_stream >= o.stream_fps;
  row["engine_fps"] = engine_fps;
  row["e2e_over_engine"] = engine_fps > 0 ? fps / engine_fps : 0.0;
  row["boxes_per_frame"] = total > 0 ? static_cast<double>(boxes) / static_cast<double>(total) : 0.0;
  if (!ms.empty()) row["latency_ms"] = {{"median", quantile(ms, 0.5)}, {"p99", quantile(ms, 0.99)}};
  else row["latency_ms"] = {{"median", nullptr}, {"p99", nullptr}};
  row["gpu_busy"] = busy ? json(busy->busy_ratio) : json(nullptr);
  if (busy) {
    row["gpu_memory_busy"] = busy->memory_busy_ratio;
    row["gpu_memory_used_mb"] = static_cast<double>(busy->memory_used_max_bytes) / (1 << 20);
    row["gpu_busy_samples"] = busy->samples;
    row["verdict"] = gpu_busy_sentence(*busy);
  } else {
    row["gpu_busy_note"] = busy_note;
  }
  // Pass: it ran, and its answer is right (the letterbox is the reference's); the realtime
  // and e2e figures are measurements, their targets (issue 22) judged by the reader.
  if (!error.empty()) row["error"] = error;
  else if (gpu && streams_created < workers.size())
    row["error"] = std::to_string(workers.size()) + " workers' sessions made " + std::to_string(streams_created) + " CUDA streams";
  else if (total == 0) row["error"] = "no frame finished";
  const char* way = row["postprocess"] == kHostWay.postprocess ? "" : " (GPU letterbox + decode)";
  std::printf("streams %3d workers %d%s: %.0f fps, %.1f per stream (%s), e2e/engine %.2f, p99 %.1f ms, gpu busy %s\n", n, o.workers, way,
              fps, per_stream, per_stream >= o.stream_fps ? "realtime" : "NOT realtime", row["e2e_over_engine"].get<double>(),
              ms.empty() ? 0.0 : quantile(ms, 0.99), busy ? std::to_string(busy->busy_ratio).c_str() : "n/a");
}

// The GPU way's answer against the host way's on the first frame, worker by worker (each runs
// it once here: its first GPU letterbox and decode are not timed): the same kept boxes within the
// fp16 tolerance of the check's detections (classes equal, corners within 1 px, scores near the
// threshold excepted). Empty when they agree; the first difference or failure otherwise.
std::string check_gpu_way(const StreamsOptions& o, std::vector<Worker>& workers, const std::vector<uint8_t>& bgr, const HostLetterbox& letterbox,
                          const InputPlacement& placement) {
  for (size_t i = 0; i < workers.size(); ++i) {
    Worker& w = workers[i];
    if (!w.gpu_input || !w.gpu_detect) return "worker " + std::to_string(i) + ": no GPU letterbox or decode on this session";
    letterbox.run(bgr.data(), w.staged);
    if (auto st = w.session->run(std::span<const TensorRef>(&w.input, 1), w.outputs); !st) return st.error().message;
    const Shape& hs = w.outputs.at(0).shape();
    if (hs.rank != 3 || hs[1] < 5) return "output 0 is " + hs.str() + ", not a YOLOv8 head [1, 4 + classes, anchors]";
    Detections host;
    decode_yolov8(w.outputs[0].as<float>(), hs[1], hs[2], o.conf, o.iou, w.nms, host);
    if (auto st = w.gpu_input->put_bgr(0, 1, bgr.data(), o.frame_width, o.frame_height, 3 * int64_t{o.frame_width}, placement); !st)
      return "GPU letterbox: " + st.error().message;
    if (auto st = w.gpu_input->infer_put(w.gpu_outputs); !st) return "GPU letterbox: " + st.error().message;
    Detections on_gpu;
    if (auto st = w.gpu_detect->detect(gpu_head(hs), gpu_params(o), 0, on_gpu); !st) return "GPU decode: " + st.error().message;
    const DetectionParity parity = compare_detections(host, on_gpu, o.conf, 0.02f, 1.0f);
    if (!parity.same())
      return "worker " + std::to_string(i) + ": the GPU letterbox + decode kept other boxes than the host's on the first frame (missing " +
             std::to_string(parity.missing) + ", extra " + std::to_string(parity.extra) + ")";
  }
  return {};
}

}  // namespace

int run_streams(const StreamsOptions& o, const std::shared_ptr<const Backend>& gpu, const std::function<void(const json&)>& emit) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.budget_seconds * 1000));
  int failed = 0;
  auto model = NativeModel::load(o.model);
  if (!model) {
    for (int n : o.streams) emit(json{{"streams", n}, {"workers", o.workers}, {"pass", false}, {"error", model.error().message}});
    return static_cast<int>(o.streams.size());
  }
  const Setup setup{*model, gpu, Shape{1, o.channels, o.height, o.width}};
  const auto frames = make_frames(o.frame_width, o.frame_height, std::max(1, o.distinct_frames));
  const InputPlacement placement = placement_for(o.frame_width, o.frame_height, o.width, o.height, PreprocessSpec{});
  const HostLetterbox letterbox(o.frame_width, o.frame_height, placement);
  // The fast letterbox against the plain reference on the first frame: bit for bit.
  std::vector<float> fast(static_cast<size_t>(setup.input.numel()));
  letterbox.run(frames[0].data(), fast.data());
  const std::vector<float> ref = reference_letterbox_bgr(frames[0].data(), o.frame_width, o.frame_height, placement);
  const bool letterbox_ok = ref == fast;

  // The M workers' sessions, made once for every row (planning, cuDNN's probes and the graph's
  // recording are not the rows' business), and the engine alone on them, once: the input already
  // staged, nothing around it.
  const std::string spent = "skipped: the streams budget of " + std::to_string(static_cast<int>(o.budget_seconds)) + " s is spent";
  if (std::chrono::duration<double>(deadline - Clock::now()).count() < 2 * o.row_seconds + 0.5) {
    for (int n : o.streams) emit(skipped(o, n, spent));
    return static_cast<int>(o.streams.size());
  }
  uint64_t streams_created = 0;
  auto workers = make_workers(o, setup, streams_created);
  std::optional<double> engine_fps;
  std::string setup_error = workers ? "" : workers.error().message;
  if (workers) {
    const double wall = run_workers(*workers, o.row_seconds, [](Worker& w) {
      if (auto st = w.session->run(std::span<const TensorRef>(&w.input, 1), w.outputs); !st) w.error = st.error().message;
      else ++w.frames;
    });
    int64_t total = 0;
    for (Worker& w : *workers) {
      total += w.frames;
      if (!w.error.empty()) setup_error = "engine alone: " + w.error;
      w.frames = 0;
    }
    if (setup_error.empty()) engine_fps = wall > 0 ? total * 1000.0 / wall : 0.0;
  }
  // On a GPU, each row again with the frame's way on the GPU: checked first against the host's.
  FrameWay gpu_way{"gpu letterbox", "gpu decode + nms"};
  std::string gpu_setup_error;
  if (gpu && workers) {
    if (!workers->empty() && (*workers)[0].gpu_input && (*workers)[0].gpu_detect)
      gpu_way = {(*workers)[0].gpu_input->where(), (*workers)[0].gpu_detect->where()};
    gpu_setup_error = check_gpu_way(o, *workers, frames[0], letterbox, placement);
  }
  auto row_base = [&](int n, const FrameWay& way) {
    return json{{"streams", n}, {"workers", o.workers}, {"pass", false}, {"error", nullptr}, {"model", o.model},
                {"frame", std::to_string(o.frame_width) + "x" + std::to_string(o.frame_height)},
                {"input", std::to_string(o.width) + "x" + std::to_string(o.height)}, {"precision", gpu ? "fp16" : "fp32"},
                {"preprocess", way.preprocess}, {"postprocess", way.postprocess},
                {"letterbox_matches_reference", letterbox_ok}, {"target_stream_fps", o.stream_fps}};
  };
  // The host way: the letterbox on the worker's thread into the staging, the engine, the decode on the CPU.
  auto host_frame = [&](Worker& w, const uint8_t* bgr) {
    letterbox.run(bgr, w.staged);
    if (auto st = w.session->run(std::span<const TensorRef>(&w.input, 1), w.outputs); !st) {
      w.error = st.error().message;
      return false;
    }
    const HostTensor& head = w.outputs.at(0);
    const Shape& hs = head.shape();
    if (hs.rank != 3 || hs[1] < 5) {
      w.error = "output 0 is " + hs.str() + ", not a YOLOv8 head [1, 4 + classes, anchors]";
      return false;
    }
    decode_yolov8(head.as<float>(), hs[1], hs[2], o.conf, o.iou, w.nms, w.dets);
    return true;
  };
  // The GPU way: the frame uploaded as it is and letterboxed by the kernel, the engine, the head
  // decoded and suppressed on the device, the kept boxes back.
  const GpuDetectHead head = gpu && workers && !workers->empty() ? gpu_head(workers->front().outputs.at(0).shape()) : GpuDetectHead{};
  const GpuDetectParams params = gpu_params(o);
  auto gpu_frame = [&](Worker& w, const uint8_t* bgr) {
    Status st = w.gpu_input->put_bgr(0, 1, bgr, o.frame_width, o.frame_height, 3 * int64_t{o.frame_width}, placement);
    if (st) st = w.gpu_input->infer_put(w.gpu_outputs);
    if (st) st = w.gpu_detect->detect(head, params, 0, w.dets);
    if (!st) w.error = st.error().message;
    return static_cast<bool>(st);
  };
  for (int n : o.streams) {
    json row = row_base(n, kHostWay);
    if (!setup_error.empty()) {
      row["error"] = setup_error;
      ++failed;
      emit(row);
      continue;
    }
    // A row that no longer fits in the budget is recorded as skipped.
    if (std::chrono::duration<double>(deadline - Clock::now()).count() < o.row_seconds + 0.5) {
      emit(skipped(o, n, spent));
      ++failed;
      continue;
    }
    measure_row(row, o, n, gpu != nullptr, *workers, streams_created, *engine_fps, frames, host_frame);
    if (row["error"].is_null() && !letterbox_ok) row["error"] = "the host letterbox differs from tests/gpu_frames_vectors.h's reference";
    row["pass"] = row["error"].is_null();
    failed += !row["pass"].get<bool>();
    emit(row);
    if (!gpu) continue;
    // The same streams with the frame's way on the GPU (--preprocess-on gpu, --postprocess-on gpu).
    json on_gpu = row_base(n, gpu_way);
    if (std::chrono::duration<double>(deadline - Clock::now()).count() < o.row_seconds + 0.5) {
      emit(skipped(o, n, spent, gpu_way));
      ++failed;
      continue;
    }
    if (!gpu_setup_error.empty()) on_gpu["error"] = gpu_setup_error;
    else measure_row(on_gpu, o, n, true, *workers, streams_created, *engine_fps, frames, gpu_frame);
    on_gpu["pass"] = on_gpu["error"].is_null();
    failed += !on_gpu["pass"].get<bool>();
    emit(on_gpu);
  }
  return failed;
}

}  // namespace sd::gpu_check

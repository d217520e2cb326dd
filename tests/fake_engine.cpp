#include "fake_engine.h"

#include <fstream>
#include <random>
#include <thread>

#include <onnx/onnx_pb.h>

#include "engine/engine_registry.h"
#include "engine/gpu_head_on_device.h"
#include "gpu_frames_vectors.h"
#include "postprocess/detection_parity.h"

namespace sd::test {
namespace {

// FakeEngineConfig::gpu_frames: frames letterboxed by the kernels' reference into a host batch.
class HostFrameInput final : public GpuFrameInput {
 public:
  HostFrameInput(InferenceContext& context, const FakeEngineConfig& config) : context_(context), config_(config) {}
  Status put_bgr(int slot, int batch, const uint8_t* bgr, int width, int height, int64_t pitch,
                 const GpuInputPlacement& p) override {
    std::vector<uint8_t> packed(static_cast<size_t>(width) * height * 3);
    for (int y = 0; y < height; ++y)
      std::copy_n(bgr + y * pitch, width * 3, packed.data() + static_cast<size_t>(y) * width * 3);
    return put(slot, batch, p, gpu_frames::reference_letterbox_bgr(packed.data(), width, height, p));
  }
  Status put_i420(int slot, int batch, const uint8_t* i420, int width, int height, const GpuInputPlacement& p) override {
    const size_t y_bytes = static_cast<size_t>(width) * height, c = y_bytes / 4;
    std::vector<uint8_t> nv12(i420, i420 + y_bytes);
    for (size_t i = 0; i < c; ++i) nv12.push_back(i420[y_bytes + i]), nv12.push_back(i420[y_bytes + c + i]);
    return put(slot, batch, p, gpu_frames::reference_letterbox_nv12(nv12.data(), width, height, p));
  }
  // The fake device frames of the tests lie in host memory: read as they are.
  Status put_nv12_device(int slot, int batch, const DeviceNv12& f, const GpuInputPlacement& p) override {
    std::vector<uint8_t> nv12(static_cast<size_t>(f.width) * f.height * 3 / 2);
    for (int y = 0; y < f.height; ++y) std::copy_n(f.luma + y * f.pitch, f.width, nv12.data() + static_cast<size_t>(y) * f.width);
    uint8_t* uv = nv12.data() + static_cast<size_t>(f.width) * f.height;
    for (int y = 0; y < f.height / 2; ++y) std::copy_n(f.chroma + y * f.pitch, f.width, uv + static_cast<size_t>(y) * f.width);
    config_.device_frames_put->fetch_add(1);
    return put(slot, batch, p, gpu_frames::reference_letterbox_nv12(nv12.data(), f.width, f.height, p));
  }
  Status infer_put(std::vector<Tensor>& outputs) override { return context_.infer(input_.view(), outputs); }
  std::string where() const override { return "cuda:0 (fake)"; }

 private:
  Status put(int slot, int batch, const GpuInputPlacement& p, const std::vector<float>& planes) {
    if (config_.gpu_frames_fail) return fail(ErrorCode::kInternal, "fake GPU letterbox failed on purpose");
    config_.frames_put->fetch_add(1);
    if (slot == 0) input_.resize(Shape{batch, 3, p.dst_height, p.dst_width});
    std::copy(planes.begin(), planes.end(), input_.data() + static_cast<int64_t>(slot) * static_cast<int64_t>(planes.size()));
    return ok();
  }
  InferenceContext& context_;
  const FakeEngineConfig& config_;
  Tensor input_;
};

// FakeEngineConfig::gpu_detect: the context's last outputs decoded by the plain CPU reference.
class HostDetectOutput final : public GpuDetectOutput, public GpuHeadOnDevice {
 public:
  HostDetectOutput(const std::vector<Tensor>& last, const FakeEngineConfig& config, bool& keep) : last_(last), config_(config), keep_(keep) {}
  Status detect(const GpuDetectHead& head, const GpuDetectParams& params, int image, Detections& out) override {
    out.clear();
    const int64_t call = config_.detect_calls->fetch_add(1);
    if (config_.gpu_detect_fail || (config_.gpu_detect_fail_from >= 0 && call >= config_.gpu_detect_fail_from))
      return fail(ErrorCode::kInternal, "fake GPU decode failed on purpose");
    if (head.kind != GpuDetectHead::Kind::kYoloV8 || head.transposed || last_.empty()) return fail(ErrorCode::kInternal, "fake GPU decode: not the fake head");
    const Shape& s = last_[0].shape();
    config_.images_detected->fetch_add(1);
    out = decode_yolov8_plain(last_[0].data() + image * s[1] * s[2], s[1], s[2], params.conf_threshold, params.iou_threshold);
    if (params.max_det > 0 && out.size() > static_cast<size_t>(params.max_det)) out.resize(static_cast<size_t>(params.max_det));
    return ok();
  }
  std::string where() const override { return "cuda:0 (fake decode)"; }
  bool keep_on_device(int output, bool on) override {
    if (output != 0) return false;
    keep_ = on;
    return true;
  }
  Status host_output(int output, Tensor& out) override {
    if (output != 0 || last_.empty()) return fail(ErrorCode::kInternal, "fake host_output: no output " + std::to_string(output));
    out.resize(last_[0].shape());
    std::copy_n(last_[0].data(), last_[0].shape().numel(), out.data());
    return ok();
  }

 private:
  const std::vector<Tensor>& last_;
  const FakeEngineConfig& config_;
  bool& keep_;
};

class FakeContext final : public InferenceContext {
 public:
  explicit FakeContext(FakeEngineConfig c) : config_(std::move(c)), rng_(std::random_device{}()) {
    if (config_.gpu_frames) frames_ = std::make_unique<HostFrameInput>(*this, config_);
    if (config_.gpu_detect) detect_ = std::make_unique<HostDetectOutput>(last_, config_, keep_);
  }
  GpuFrameInput* gpu_frame_input() override { return frames_.get(); }
  GpuDetectOutput* gpu_detect_output() override { return detect_.get(); }
  Status infer(const TensorView& input, std::vector<Tensor>& outputs) override {
    int64_t call = config_.calls->fetch_add(1);
    int delay = config_.fixed_delay_ms;
    if (config_.max_delay_ms > 0) delay += static_cast<int>(rng_() % static_cast<unsigned>(config_.max_delay_ms + 1));
    if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    if (call == config_.fail_at_call)
      return fail(ErrorCode::kInternal, "fake engine failed on purpose at call " + std::to_string(call));
    const int64_t n = input.shape[0];
    int64_t seen = config_.max_batch_seen->load();
    while (n > seen && !config_.max_batch_seen->compare_exchange_weak(seen, n)) {
    }
    const int64_t plane = input.shape[2] * input.shape[3];
    outputs.resize(1);
    outputs[0].resize(Shape{n, 5, 8});
    for (int64_t b = 0; b < n; ++b) {
      const float* img = input.data + b * 3 * plane;
      double sum = 0;
      for (int64_t i = 0; i < plane; ++i) sum += img[i];
      float cx, cy, w, h;
      fake_box_for_mean(sum / static_cast<double>(plane), cx, cy, w, h);
      float* out = outputs[0].data() + b * 5 * 8;
      for (int a = 0; a < 8; ++a) {
        out[0 * 8 + a] = cx;
        out[1 * 8 + a] = cy;
        out[2 * 8 + a] = w;
        out[3 * 8 + a] = h;
        out[4 * 8 + a] = a == 0 ? 0.9f : 0.01f;
      }
    }
    if (config_.gpu_detect) {  // what the "device" decodes
      last_.resize(1);
      last_[0].resize(outputs[0].shape());
      std::copy_n(outputs[0].data(), outputs[0].shape().numel(), last_[0].data());
      if (keep_) {  // left on the device: the host's copy is not made
        std::fill_n(outputs[0].data(), outputs[0].shape().numel(), 0.f);
        config_.heads_kept->fetch_add(1);
      }
    }
    return ok();
  }

 private:
  FakeEngineConfig config_;
  std::mt19937 rng_;
  std::unique_ptr<HostFrameInput> frames_;
  std::vector<Tensor> last_;
  bool keep_ = false;  // the head "left on the device" (keep_on_device)
  std::unique_ptr<HostDetectOutput> detect_;
};

class FakeEngine final : public Engine {
 public:
  explicit FakeEngine(FakeEngineConfig c) : config_(std::move(c)) {}
  std::string name() const override { return "fake"; }
  const std::vector<TensorInfo>& inputs() const override { return inputs_; }
  const std::vector<TensorInfo>& outputs() const override { return outputs_; }
  EngineCapabilities capabilities() const override {
    EngineCapabilities caps;
    caps.dynamic_input_size = true;
    caps.dynamic_batch = true;
    if (config_.gpu_frames || config_.gpu_detect) caps.device = "cuda:0";
    return caps;
  }
  Result<std::unique_ptr<InferenceContext>> create_context(const ContextOptions&) override {
    return std::unique_ptr<InferenceContext>(new FakeContext(config_));
  }

 private:
  FakeEngineConfig config_;
  std::vector<TensorInfo> inputs_{TensorInfo{"images", Shape{-1, 3, -1, -1}}};
  std::vector<TensorInfo> outputs_{TensorInfo{"output0", Shape{-1, 5, 8}}};
};

}  // namespace

void fake_box_for_mean(double mean, float& cx, float& cy, float& w, float& h) {
  cx = static_cast<float>(20.0 + 100.0 * mean);
  cy = static_cast<float>(30.0 + 50.0 * mean);
  w = 12.f;
  h = 16.f;
}

void register_fake_engine(const std::string& name, const FakeEngineConfig& config) {
  register_engine(name, [config](const ModelInfo&, const EngineOptions&) -> Result<std::unique_ptr<Engine>> {
    return std::unique_ptr<Engine>(new FakeEngine(config));
  });
}

void write_minimal_onnx(const std::string& path) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(12);
  auto* g = m.mutable_graph();
  g->set_name("fake");
  auto* in = g->add_input();
  in->set_name("images");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_value(3);
  shape->add_dim()->set_dim_param("height");
  shape->add_dim()->set_dim_param("width");
  g->add_output()->set_name("output0");
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("images");
  n->add_output("output0");
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

}  // namespace sd::test

#include "engine/native/native_engine.h"

#include <cstring>
#include <mutex>
#include <thread>

#include "core/log.h"

#include "engine/native/backend.h"
#include "engine/native/cpu/bf16_support.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/cuda/gpu_detect_output.h"
#include "engine/native/cuda/gpu_frame_staging.h"
#include "engine/native/device.h"
#include "engine/native/session.h"

namespace sd {
namespace {

class NativeContext final : public InferenceContext {
 public:
  // `device`: the session's device (nullptr: the CPU alone); on a CUDA GPU frames can be letterboxed there.
  NativeContext(std::unique_ptr<native::NativeSession> s, const native::Backend* device) : session_(std::move(s)) {
    if (device && device->device().kind == native::DeviceKind::kCuda) {
      frames_ = native::make_cuda_frame_input(*session_, device->device().index, device->name(), &keep_on_device_);
      detect_ = native::make_cuda_detect_output(*session_, device->device().index, device->name(), &keep_on_device_);
    }
  }
  GpuFrameInput* gpu_frame_input() override { return frames_.get(); }
  GpuDetectOutput* gpu_detect_output() override { return detect_.get(); }
  Status infer(const TensorView& input, std::vector<Tensor>& outputs) override {
    native::TensorRef in{native::DType::kFloat32, input.shape, const_cast<float*>(input.data)};
    native::NativeSession::RunOptions options;
    options.outputs_on_device = keep_on_device_;
    SD_TRY(session_->run(std::span<const native::TensorRef>(&in, 1), results_, options));
    outputs.resize(results_.size());
    for (size_t i = 0; i < results_.size(); ++i) {
      if (i < 64 && (keep_on_device_ >> i & 1)) continue;  // read on the device (detect_): stale here
      const native::HostTensor& r = results_[i];
      if (r.dtype() != native::DType::kFloat32) return fail(ErrorCode::kModel, "model output " + std::to_string(i) + " is not float32");
      outputs[i].resize(r.shape());
      std::memcpy(outputs[i].data(), r.data(), r.bytes());
    }
    return ok();
  }

 private:
  std::unique_ptr<native::NativeSession> session_;
  std::vector<native::HostTensor> results_;
  uint64_t keep_on_device_ = 0;  // outputs whose host copy the runs skip (set through detect_)
  std::unique_ptr<GpuFrameInput> frames_;  // declared after the session it writes into: goes first
  std::unique_ptr<GpuDetectOutput> detect_;  // reads the session's output: goes first too
};

class NativeEngine final : public Engine {
 public:
  NativeEngine(std::shared_ptr<const native::NativeModel> m, std::shared_ptr<const native::Backend> device, bool device_fp16, bool cuda_graphs)
      : model_(std::move(m)), device_(std::move(device)), device_fp16_(device_fp16), cuda_graphs_(cuda_graphs) {
    for (const auto& i : model_->inputs()) inputs_.push_back({i.name, i.shape});
    for (const auto& o : model_->outputs()) outputs_.push_back({o.name, o.shape});
  }
  std::string name() const override { return "native"; }
  const std::vector<TensorInfo>& inputs() const override { return inputs_; }
  const std::vector<TensorInfo>& outputs() const override { return outputs_; }
  EngineCapabilities capabilities() const override {
    EngineCapabilities c;
    const Shape& s = inputs_.at(0).shape;
    c.dynamic_batch = s.rank == 4 && s[0] < 0;
    c.dynamic_input_size = s.rank == 4 && (s[2] < 0 || s[3] < 0);
    c.device = device_ ? device_->name() : "cpu";
    c.notes = model_->notes();
    return c;
  }
  Result<std::unique_ptr<InferenceContext>> create_context(const ContextOptions& options) override {
    native::SessionOptions so;
    so.threads = options.threads > 0 ? options.threads : default_threads();
    so.profile_rows = options.profile_rows;
    so.memory_limit_bytes = static_cast<size_t>(options.memory_limit_bytes);
    so.cuda_graphs = cuda_graphs_;
    if (device_) so.backends = {device_};  // the CPU runs what the device does not
    so.device_fp16 = device_fp16_;
    SD_ASSIGN_OR_RETURN(auto session, native::NativeSession::create(model_, so));
    return std::unique_ptr<InferenceContext>(new NativeContext(std::move(session), device_.get()));
  }

 private:
  static int default_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
  }
  std::shared_ptr<const native::NativeModel> model_;
  std::shared_ptr<const native::Backend> device_;  // nullptr: the CPU alone
  bool device_fp16_ = false;                       // --precision fp16 (auto on a GPU)
  bool cuda_graphs_ = true;
  std::vector<TensorInfo> inputs_, outputs_;
};

}  // namespace

Result<std::unique_ptr<Engine>> load_native_engine(const ModelInfo& model, const EngineOptions& options) {
  SD_ASSIGN_OR_RETURN(auto device, native::backend_for_device(options.device));
  native::LoadOptions load;
  const bool on_cuda = device && device->device().kind == native::DeviceKind::kCuda;
  SD_ASSIGN_OR_RETURN(load.precision, native::resolve_precision(options.precision, native::cpu_has_bf16(), on_cuda));
  if (model.format != ModelFormat::kOnnx)
    return fail(ErrorCode::kUnsupported, "the native engine runs ONNX models; use --engine opencv for " + model.model_path);
  SD_ASSIGN_OR_RETURN(auto m, native::NativeModel::load(model.model_path, load));
  if (m->inputs().size() != 1) return fail(ErrorCode::kModel, "model " + model.model_path + " has " + std::to_string(m->inputs().size()) + " inputs; streamdet feeds one image tensor");
  if (m->inputs()[0].dtype != native::DType::kFloat32 || m->inputs()[0].shape.rank != 4)
    return fail(ErrorCode::kModel, "model " + model.model_path + ": input '" + m->inputs()[0].name + "' is not a float32 NCHW image tensor");
  if (on_cuda) {
    // Said once per process: whether the GPU's convolutions go through cuDNN (loaded at run time).
    static std::once_flag once;
    std::call_once(once, [] {
      const native::CudaInfo info = native::cuda_info();
      if (info.cudnn_loaded)
        log_info("cuDNN %s: convolutions on the GPU go through cuDNN where their plan passes its probe", info.cudnn.c_str());
      else
        log_warn("%s", info.cudnn.c_str());
    });
  }
  return std::unique_ptr<Engine>(new NativeEngine(std::move(m), std::move(device), load.precision == native::Precision::kFp16, options.cuda_graphs));
}

}  // namespace sd

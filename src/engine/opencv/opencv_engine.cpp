#include "engine/opencv/opencv_engine.h"

#include "core/human_bytes.h"
#include "core/memory_budget.h"

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>

namespace sd {
namespace {

Result<cv::dnn::Net> read_net(const ModelInfo& model) {
  try {
    cv::dnn::Net net = model.format == ModelFormat::kDarknet
                           ? cv::dnn::readNetFromDarknet(model.model_path, model.weights_path)
                           : cv::dnn::readNetFromONNX(model.model_path);
    if (net.empty()) return fail(ErrorCode::kModel, "OpenCV DNN could not load model " + model.model_path);
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    return net;
  } catch (const cv::Exception& e) {
    std::string why = e.err.empty() ? e.what() : e.err;
    for (char& c : why)
      if (c == '\n') c = ' ';
    return fail(ErrorCode::kModel, "OpenCV DNN cannot load model " + model.model_path + ": " + why);
  }
}

// Names of the layers whose outputs we read: the graph outputs for ONNX; for Darknet the
// convolution feeding each [yolo] (Region) layer, found through the Permute OpenCV inserts.
Result<std::vector<std::string>> output_layer_names(cv::dnn::Net& net, const ModelInfo& model) {
  if (model.format != ModelFormat::kDarknet) return net.getUnconnectedOutLayersNames();
  std::vector<std::string> names;
  for (const std::string& name : net.getLayerNames()) {
    int id = net.getLayerId(name);
    if (net.getLayer(id)->type != "Region") continue;
    auto inputs = net.getLayerInputs(id);
    while (!inputs.empty() && inputs[0]->type == "Permute") inputs = net.getLayerInputs(net.getLayerId(inputs[0]->name));
    if (inputs.empty())
      return fail(ErrorCode::kModel, "Darknet model " + model.model_path + ": [yolo] layer " + name + " has no input");
    names.push_back(inputs[0]->name);
  }
  if (names.size() != model.darknet->yolo_layers.size())
    return fail(ErrorCode::kModel, "Darknet model " + model.model_path + ": OpenCV built " +
                                       std::to_string(names.size()) + " yolo layers, the cfg has " +
                                       std::to_string(model.darknet->yolo_layers.size()));
  return names;
}

class OpenCvContext final : public InferenceContext {
 public:
  OpenCvContext(cv::dnn::Net net, std::vector<std::string> out_names, std::string model_path, uint64_t memory_limit)
      : net_(std::move(net)), out_names_(std::move(out_names)), model_path_(std::move(model_path)),
        memory_limit_(memory_limit != 0 ? memory_limit : default_memory_budget()) {}

  Status infer(const TensorView& input, std::vector<Tensor>& outputs) override {
    if (input.shape.rank != 4) return fail(ErrorCode::kInternal, "OpenCV engine expects an NCHW input");
    int dims[4];
    for (int i = 0; i < 4; ++i) dims[i] = static_cast<int>(input.shape[i]);
    // Wraps the caller's buffer without a copy; OpenCV copies it into its own input blob.
    cv::Mat blob(4, dims, CV_32F, const_cast<float*>(input.data));
    if (input.shape != checked_shape_) {
      // OpenCV allocates every layer's output for the input's shape: ask it what that takes first.
      size_t weights = 0, blobs = 0;
      try {
        net_.getMemoryConsumption(cv::dnn::MatShape(dims, dims + 4), weights, blobs);
      } catch (const cv::Exception& e) {
        return fail(ErrorCode::kModel, "OpenCV DNN cannot size " + model_path_ + " for input " + input.shape.str() + ": " +
                                           (e.err.empty() ? e.what() : e.err));
      }
      if (auto over = over_budget(static_cast<uint64_t>(blobs) + weights, memory_limit_))
        return fail(ErrorCode::kModel, "model " + model_path_ + " at input " + input.shape.str() + " needs " +
                                           human_bytes(static_cast<uint64_t>(blobs) + weights) + ", " + *over);
      checked_shape_ = input.shape;
    }
    try {
      net_.setInput(blob);
      net_.forward(mats_, out_names_);
    } catch (const cv::Exception& e) {
      std::string why = e.err.empty() ? e.what() : e.err;
      return fail(ErrorCode::kModel, "OpenCV DNN inference failed on " + model_path_ + " with input " +
                                         input.shape.str() + ": " + why);
    } catch (const std::bad_alloc&) {
      return fail(ErrorCode::kModel, "out of memory running " + model_path_ + " with input " + input.shape.str());
    }
    outputs.resize(mats_.size());
    for (size_t i = 0; i < mats_.size(); ++i) {
      const cv::Mat& m = mats_[i];
      Shape shape;
      for (int d = 0; d < m.dims && d < Shape::kMaxRank; ++d) shape.dims[static_cast<size_t>(shape.rank++)] = m.size[d];
      outputs[i].resize(shape);
      cv::Mat dst(m.dims, m.size.p, CV_32F, outputs[i].data());
      m.convertTo(dst, CV_32F);
    }
    return ok();
  }

 private:
  cv::dnn::Net net_;
  std::vector<std::string> out_names_;
  std::string model_path_;
  uint64_t memory_limit_;
  Shape checked_shape_;  // the input shape whose memory was checked
  std::vector<cv::Mat> mats_;
};

class OpenCvEngine final : public Engine {
 public:
  explicit OpenCvEngine(ModelInfo model) : model_(std::move(model)) {}

  Status init() {
    SD_ASSIGN_OR_RETURN(cv::dnn::Net net, read_net(model_));
    SD_ASSIGN_OR_RETURN(out_names_, output_layer_names(net, model_));
    if (model_.format == ModelFormat::kDarknet) {
      const auto& cfg = *model_.darknet;
      inputs_ = {TensorInfo{"data", Shape{1, cfg.channels, cfg.height, cfg.width}}};
      for (const auto& n : out_names_) outputs_.push_back(TensorInfo{n, Shape{1, -1, -1, -1}});
    } else {
      inputs_ = model_.declared_inputs;
      outputs_ = model_.declared_outputs;
      if (inputs_.size() != 1)
        return fail(ErrorCode::kModel, "model " + model_.model_path + " has " + std::to_string(inputs_.size()) +
                                           " inputs; streamdet feeds models with exactly one image input");
      if (inputs_[0].shape.rank != 4)
        return fail(ErrorCode::kModel, "model " + model_.model_path + " input " + inputs_[0].name + " has shape " +
                                           inputs_[0].shape.str() + "; expected NCHW");
      if (outputs_.size() != out_names_.size()) {
        outputs_.clear();
        for (const auto& n : out_names_) outputs_.push_back(TensorInfo{n, Shape{}});
      }
    }
    first_net_ = std::move(net);
    return ok();
  }

  std::string name() const override { return "opencv"; }
  const std::vector<TensorInfo>& inputs() const override { return inputs_; }
  const std::vector<TensorInfo>& outputs() const override { return outputs_; }

  EngineCapabilities capabilities() const override {
    EngineCapabilities caps;
    const Shape& s = inputs_[0].shape;
    // Darknet nets are fully convolutional: OpenCV runs them at any multiple of 32.
    caps.dynamic_input_size = model_.format == ModelFormat::kDarknet || s[2] < 0 || s[3] < 0;
    caps.dynamic_batch = model_.format == ModelFormat::kDarknet || s[0] < 0;
    caps.device = "cpu";
    return caps;
  }

  Result<std::unique_ptr<InferenceContext>> create_context(const ContextOptions& options) override {
    // OpenCV's thread pool is process-wide.
    if (options.threads > 0) cv::setNumThreads(options.threads);
    cv::dnn::Net net;
    if (!first_net_.empty()) {
      net = std::move(first_net_);  // the net loaded at init serves the first context
      first_net_ = cv::dnn::Net();
    } else {
      SD_ASSIGN_OR_RETURN(net, read_net(model_));
    }
    return std::unique_ptr<InferenceContext>(
        new OpenCvContext(std::move(net), out_names_, model_.model_path, options.memory_limit_bytes));
  }

 private:
  ModelInfo model_;
  std::vector<TensorInfo> inputs_, outputs_;
  std::vector<std::string> out_names_;
  cv::dnn::Net first_net_;
};

}  // namespace

Result<std::unique_ptr<Engine>> load_opencv_engine(const ModelInfo& model) {
  auto engine = std::make_unique<OpenCvEngine>(model);
  SD_TRY(engine->init());
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace sd

// Static quantization, the measuring side: the fp32 model run over calibration inputs with the
// tensors to quantize observed (a copy of the model in which they are extra graph outputs, so the
// engine's passes keep them), their ranges collected as minimum / maximum or as percentiles.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.h"
#include "engine/native/session.h"
#include "quantize/qdq_rewrite.h"

namespace sd::quant {

enum class RangeMethod {
  kMinMax,      // the smallest and largest value seen over all inputs
  kPercentile,  // per input, the 0.01th and 99.99th percentile; averaged over the inputs
};

class Calibrator {
 public:
  // `tensors`: the names to observe; a graph input among them is measured from the input itself.
  static Result<std::unique_ptr<Calibrator>> create(const onnx::ModelProto& model, const std::string& base_dir,
                                                    const std::vector<std::string>& tensors, RangeMethod method,
                                                    int threads);
  // One network input (the model's first input, as the detector preprocesses a frame).
  Status observe(const native::TensorRef& input);
  int inputs_seen() const { return seen_; }
  // The ranges so far, by tensor name.
  std::map<std::string, Range> ranges() const;

 private:
  Calibrator() = default;
  void add(const std::string& name, const float* data, int64_t n);

  RangeMethod method_ = RangeMethod::kMinMax;
  std::string input_name_;
  std::vector<std::string> tensors_;
  std::vector<int> output_index_;  // per tensor: its index among the session's outputs, -1: the input
  std::unique_ptr<native::NativeSession> session_;
  std::vector<native::HostTensor> outputs_;
  struct Acc {
    double lo = 0, hi = 0;  // min/max, or the sums of the per-input percentiles
    bool any = false;
  };
  std::map<std::string, Acc> acc_;
  std::vector<float> scratch_;
  int seen_ = 0;
};

}  // namespace sd::quant

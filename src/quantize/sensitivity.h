// Per-layer sensitivity of a static quantization: which quantizable nodes cost the model's outputs
// most when they alone are quantized, measured by streamdet's own engine on a few calibration
// inputs, so that `streamdet quantize` keeps those float by itself. A node's own quantization
// noise does not say it (YOLOX-nano's stem is not the noisiest tensor, yet the one that ruins the
// accuracy: docs/benchmarks.md, "streamdet quantize"); what matters is how the error propagates
// to the outputs, which only running the network tells.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.h"
#include "engine/native/host_tensor.h"
#include "quantize/qdq_rewrite.h"

namespace sd::quant {

struct SensitivityOptions {
  int max_float = 8;        // at most this many nodes kept float by the analysis
  double target = 1e-3;     // the output error to get under (see output_error)
  int threads = 1;
};

struct NodeSensitivity {
  int node = -1;      // index in the graph
  std::string label;  // node_label
  double score = 0;   // output_error of the model with this node alone quantized
};

struct SensitivityReport {
  std::vector<NodeSensitivity> scores;  // every node of the plan's `quantized`, highest score first
  std::vector<NodeSensitivity> kept;    // the ones kept float, in the order they were chosen
  double error_all = 0;                 // output_error with every node of the plan quantized
  double error_final = 0;               // with the kept ones float
};

// The error of a model's outputs against the reference ones: per input and per output tensor
// ||y - ref||^2 / ||ref||^2 (relative squared error), averaged.
double output_error(const std::vector<std::vector<native::HostTensor>>& got,
                    const std::vector<std::vector<native::HostTensor>>& ref);

// The plan restricted to `nodes` (a subset of plan.quantized): only their activations.
QuantPlan restrict_plan(const onnx::ModelProto& model, const QuantPlan& plan, const std::vector<int>& nodes);

// Scores each node of plan.quantized by the output error of the QDQ model with only it quantized,
// over `inputs` (network inputs as the detector preprocesses frames), then keeps float the
// highest-scoring ones while the sum of the scores still quantized is above options.target, and
// checks the result on the full model (adding the next node while the measured error is above the
// target), never more than options.max_float. `base_dir`: the model's folder (external data).
Result<SensitivityReport> analyze_sensitivity(const onnx::ModelProto& model, const std::string& base_dir,
                                              const QuantPlan& plan, const std::map<std::string, Range>& ranges,
                                              const std::vector<native::HostTensor>& inputs,
                                              const SensitivityOptions& options, const std::string& what);

}  // namespace sd::quant

#include "quantize/sensitivity.h"

#include <algorithm>
#include <memory>
#include <set>

#include "engine/native/session.h"

namespace sd::quant {

namespace {

using Outputs = std::vector<std::vector<native::HostTensor>>;  // per input, the model's outputs

Result<Outputs> run_all(const onnx::ModelProto& model, const std::string& base_dir,
                        const std::vector<native::HostTensor>& inputs, int threads) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return fail(ErrorCode::kInternal, "could not serialize a model for the sensitivity analysis");
  native::LoadOptions lo;
  SD_ASSIGN_OR_RETURN(std::shared_ptr<const native::NativeModel> m,
                      native::NativeModel::load_from_bytes(bytes.data(), bytes.size(), base_dir, lo));
  native::SessionOptions so;
  so.threads = std::max(1, threads);
  SD_ASSIGN_OR_RETURN(std::unique_ptr<native::NativeSession> s, native::NativeSession::create(std::move(m), so));
  Outputs all;
  std::vector<native::HostTensor> out;
  for (const auto& in : inputs) {
    const native::TensorRef ref = in.ref();
    SD_TRY(s->run(std::span<const native::TensorRef>(&ref, 1), out));
    std::vector<native::HostTensor> kept;
    for (const auto& t : out) kept.push_back(t.clone());  // the session may reuse its buffers
    all.push_back(std::move(kept));
  }
  return all;
}

}  // namespace

double output_error(const Outputs& got, const Outputs& ref) {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    for (size_t k = 0; k < ref[i].size() && k < got[i].size(); ++k) {
      const native::HostTensor& r = ref[i][k];
      const native::HostTensor& g = got[i][k];
      if (r.dtype() != native::DType::kFloat32 || g.dtype() != native::DType::kFloat32 || r.numel() != g.numel()) continue;
      const float* a = r.as<float>();
      const float* b = g.as<float>();
      double diff = 0, energy = 0;
      for (int64_t j = 0; j < r.numel(); ++j) {
        const double d = static_cast<double>(b[j]) - a[j];
        diff += d * d;
        energy += static_cast<double>(a[j]) * a[j];
      }
      sum += diff / std::max(energy, 1e-30);
      ++n;
    }
  }
  return n ? sum / n : 0;
}

QuantPlan restrict_plan(const onnx::ModelProto& model, const QuantPlan& plan, const std::vector<int>& nodes) {
  QuantPlan p = plan;
  p.quantized = nodes;
  std::sort(p.quantized.begin(), p.quantized.end());
  const std::set<int> float_output(plan.float_output.begin(), plan.float_output.end());
  p.float_output.clear();
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> wanted;
  for (int i : p.quantized) {
    wanted.insert(g.node(i).input(0));
    if (float_output.count(i)) p.float_output.push_back(i);  // its output stays float
    else wanted.insert(g.node(i).output(0));
  }
  p.activations.clear();
  for (const auto& t : plan.activations)
    if (wanted.count(t)) p.activations.push_back(t);
  return p;
}

Result<SensitivityReport> analyze_sensitivity(const onnx::ModelProto& model, const std::string& base_dir,
                                              const QuantPlan& plan, const std::map<std::string, Range>& ranges,
                                              const std::vector<native::HostTensor>& inputs,
                                              const SensitivityOptions& options, const std::string& what) {
  SensitivityReport report;
  if (inputs.empty() || plan.quantized.empty()) return report;
  SD_ASSIGN_OR_RETURN(Outputs ref, run_all(model, base_dir, inputs, options.threads));
  auto error_of = [&](const std::vector<int>& nodes) -> Result<double> {
    SD_ASSIGN_OR_RETURN(onnx::ModelProto qdq, write_qdq(model, restrict_plan(model, plan, nodes), ranges, what));
    SD_ASSIGN_OR_RETURN(Outputs got, run_all(qdq, base_dir, inputs, options.threads));
    return output_error(got, ref);
  };
  const onnx::GraphProto& g = model.graph();
  for (int i : plan.quantized) {
    SD_ASSIGN_OR_RETURN(double e, error_of({i}));
    report.scores.push_back({i, node_label(g.node(i)), e});
  }
  std::stable_sort(report.scores.begin(), report.scores.end(),
                   [](const NodeSensitivity& a, const NodeSensitivity& b) { return a.score > b.score; });
  SD_ASSIGN_OR_RETURN(report.error_all, error_of(plan.quantized));

  // Estimate: the errors of separately quantized nodes add up. Keep float from the top while the
  // rest's sum is above the target, then check on the real model (the errors do not quite add).
  double rest = 0;
  for (const auto& s : report.scores) rest += s.score;
  size_t next = 0;
  const size_t budget = static_cast<size_t>(std::max(0, options.max_float));
  while (next < report.scores.size() && next < budget && rest > options.target) {
    rest -= report.scores[next].score;
    report.kept.push_back(report.scores[next++]);
  }
  auto remaining = [&] {
    std::set<int> kept;
    for (const auto& k : report.kept) kept.insert(k.node);
    std::vector<int> nodes;
    for (int i : plan.quantized)
      if (!kept.count(i)) nodes.push_back(i);
    return nodes;
  };
  report.error_final = report.error_all;
  if (!report.kept.empty()) {
    SD_ASSIGN_OR_RETURN(report.error_final, error_of(remaining()));
  }
  while (report.error_final > options.target && next < report.scores.size() && report.kept.size() < budget &&
         report.kept.size() + 1 < plan.quantized.size()) {
    report.kept.push_back(report.scores[next++]);
    SD_ASSIGN_OR_RETURN(report.error_final, error_of(remaining()));
  }
  return report;
}

}  // namespace sd::quant

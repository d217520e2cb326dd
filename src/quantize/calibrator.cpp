#include "quantize/calibrator.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace sd::quant {

Result<std::unique_ptr<Calibrator>> Calibrator::create(const onnx::ModelProto& model, const std::string& base_dir,
                                                       const std::vector<std::string>& tensors, RangeMethod method,
                                                       int threads) {
  std::unique_ptr<Calibrator> c(new Calibrator());
  c->method_ = method;
  c->tensors_ = tensors;
  onnx::ModelProto observed = model;
  onnx::GraphProto& g = *observed.mutable_graph();
  std::set<std::string> inputs;
  for (const auto& in : g.input())
    if (!std::any_of(g.initializer().begin(), g.initializer().end(), [&](const auto& t) { return t.name() == in.name(); }))
      inputs.insert(in.name());
  if (inputs.size() != 1) return fail(ErrorCode::kModel, "quantize takes a model of one input, this one has " + std::to_string(inputs.size()));
  c->input_name_ = *inputs.begin();
  std::vector<std::string> names;
  for (const auto& o : g.output()) names.push_back(o.name());
  for (const auto& t : tensors) {
    if (t == c->input_name_) {
      c->output_index_.push_back(-1);
      continue;
    }
    auto it = std::find(names.begin(), names.end(), t);
    if (it == names.end()) {
      onnx::ValueInfoProto* vi = g.add_output();
      vi->set_name(t);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      names.push_back(t);
      it = names.end() - 1;
    }
    c->output_index_.push_back(static_cast<int>(it - names.begin()));
  }
  std::string bytes;
  if (!observed.SerializeToString(&bytes)) return fail(ErrorCode::kModel, "could not serialize the observed model");
  native::LoadOptions lo;
  SD_ASSIGN_OR_RETURN(std::shared_ptr<const native::NativeModel> m, native::NativeModel::load_from_bytes(bytes.data(), bytes.size(), base_dir, lo));
  native::SessionOptions so;
  so.threads = std::max(1, threads);
  SD_ASSIGN_OR_RETURN(c->session_, native::NativeSession::create(std::move(m), so));
  return c;
}

void Calibrator::add(const std::string& name, const float* data, int64_t n) {
  if (n <= 0) return;
  Acc& a = acc_[name];
  double lo, hi;
  if (method_ == RangeMethod::kMinMax) {
    auto [mn, mx] = std::minmax_element(data, data + n);
    lo = *mn;
    hi = *mx;
    if (!a.any) {
      a.lo = lo;
      a.hi = hi;
    }
    a.lo = std::min(a.lo, lo);
    a.hi = std::max(a.hi, hi);
  } else {
    scratch_.assign(data, data + n);
    const auto k = static_cast<int64_t>(std::floor(static_cast<double>(n - 1) * 1e-4));
    std::nth_element(scratch_.begin(), scratch_.begin() + k, scratch_.end());
    lo = scratch_[static_cast<size_t>(k)];
    std::nth_element(scratch_.begin(), scratch_.begin() + (n - 1 - k), scratch_.end());
    hi = scratch_[static_cast<size_t>(n - 1 - k)];
    a.lo += lo;
    a.hi += hi;
  }
  a.any = true;
}

Status Calibrator::observe(const native::TensorRef& input) {
  SD_TRY(session_->run(std::span<const native::TensorRef>(&input, 1), outputs_));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const int k = output_index_[i];
    if (k < 0) {
      add(tensors_[i], input.as<float>(), input.numel());
      continue;
    }
    const native::HostTensor& t = outputs_[static_cast<size_t>(k)];
    if (t.dtype() != native::DType::kFloat32)
      return fail(ErrorCode::kModel, "tensor '" + tensors_[i] + "' is not float32: it cannot be quantized");
    add(tensors_[i], t.as<float>(), t.numel());
  }
  ++seen_;
  return ok();
}

std::map<std::string, Range> Calibrator::ranges() const {
  std::map<std::string, Range> r;
  for (const auto& [name, a] : acc_) {
    const double div = method_ == RangeMethod::kPercentile ? std::max(1, seen_) : 1;
    r[name] = Range{static_cast<float>(a.lo / div), static_cast<float>(a.hi / div)};
  }
  return r;
}

}  // namespace sd::quant

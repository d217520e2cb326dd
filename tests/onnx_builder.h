// Builds small ONNX models in memory for the native engine's tests (no files, no Python).
#pragma once

#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace sd::test {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 17) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph_ = model_.mutable_graph();
    graph_->set_name("test");
  }
  // dims: -1 for a dynamic dim.
  void input(const std::string& name, std::vector<int64_t> dims, int elem = onnx::TensorProto::FLOAT) {
    value_info(graph_->add_input(), name, dims, elem);
  }
  void output(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* v = graph_->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void initializer(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  }
  void initializer_i64(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_int64_data(v);
  }
  std::vector<float> random_initializer(const std::string& name, std::vector<int64_t> dims, float lo, float hi) {
    size_t n = 1;
    for (auto d : dims) n *= static_cast<size_t>(d);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng_);
    initializer(name, dims, v);
    return v;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs) {
    auto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph_->node_size()));
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  static void attr_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_float(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  onnx::GraphProto& graph() { return *graph_; }  // for what the helpers above do not make
  onnx::ModelProto& model() { return model_; }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims, int elem) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (auto d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("dyn");
    }
  }
  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  std::mt19937 rng_{7};
};

// An initializer of any element type from its raw bytes (int8/uint8/int32 weights, scales, zero points).
template <class T>
void init_raw(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, int type, const std::vector<T>& v) {
  auto* t = b.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
}

}  // namespace sd::test

// The native engine's graph: what the ONNX loader builds and the passes rewrite. Values are
// indexed by int; -1 stands for an omitted optional input. Nodes are kept topologically sorted.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/host_tensor.h"

namespace sd::native {

struct Attribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0.f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  HostTensor t;
};

class Attributes {
 public:
  void set(const std::string& name, Attribute a) { map_[name] = std::move(a); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const Attribute* find(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> fallback = {}) const;
  std::vector<std::string> get_strings_or_empty(const std::string& name) const;
  const std::map<std::string, Attribute>& all() const { return map_; }

 private:
  std::map<std::string, Attribute> map_;
};

struct Value {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;                        // declared/inferred; -1 for a dynamic dim
  bool shape_known = false;           // false: rank unknown
  std::optional<HostTensor> constant; // initializers and folded values
};

struct Node {
  std::string name;     // ONNX node name, or "<op_type>_<index>" when the model gives none
  std::string op_type;
  std::string domain;   // "" for the default ONNX domain
  std::vector<int> inputs;
  std::vector<int> outputs;
  Attributes attrs;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // graph inputs that are not initializers
  std::vector<int> outputs;
  int opset = 0;             // default-domain opset of the model

  int find_value(const std::string& name) const;  // -1 when absent
  int add_value(Value v);
  std::string describe(const Node& n) const;      // "Conv node 'conv1' (opset 17)"
};

}  // namespace sd::native

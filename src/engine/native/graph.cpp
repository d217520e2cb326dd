#include "engine/native/graph.h"

namespace sd::native {

const Attribute* Attributes::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kInt ? a->i : fallback;
}

float Attributes::get_float(const std::string& name, float fallback) const {
  const Attribute* a = find(name);
  if (!a) return fallback;
  if (a->kind == Attribute::Kind::kFloat) return a->f;
  if (a->kind == Attribute::Kind::kInt) return static_cast<float>(a->i);
  return fallback;
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kString ? a->s : fallback;
}

std::vector<int64_t> Attributes::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kInts ? a->ints : fallback;
}

std::vector<float> Attributes::get_floats(const std::string& name, std::vector<float> fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kFloats ? a->floats : fallback;
}

std::vector<std::string> Attributes::get_strings_or_empty(const std::string& name) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kStrings ? a->strings : std::vector<std::string>{};
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<int>(i);
  return -1;
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size() - 1);
}

std::string Graph::describe(const Node& n) const {
  return n.op_type + " node '" + n.name + "' (opset " + std::to_string(opset) + ")";
}

}  // namespace sd::native

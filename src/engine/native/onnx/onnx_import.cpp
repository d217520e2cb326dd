#include "engine/native/onnx/onnx_import.h"

#include "engine/native/aligned_buffer.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <queue>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "core/human_bytes.h"

namespace sd::native {
namespace fs = std::filesystem;

namespace {

Result<Shape> shape_from_dims(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& name) {
  if (dims.size() > Shape::kMaxRank)
    return fail(ErrorCode::kUnsupported, "tensor '" + name + "' has rank " + std::to_string(dims.size()) + " (at most " +
                                             std::to_string(Shape::kMaxRank) + " supported)");
  Shape s;
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0) return fail(ErrorCode::kModel, "tensor '" + name + "' has a negative dimension");
    if (d > 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d)
      return fail(ErrorCode::kModel, "tensor '" + name + "' is impossibly large");
    numel *= d;
    s.dims[static_cast<size_t>(s.rank++)] = d;
  }
  if (numel > (int64_t{1} << 34)) return fail(ErrorCode::kModel, "tensor '" + name + "' is impossibly large");
  return s;
}

template <class Src, class Dst>
void copy_field(const google::protobuf::RepeatedField<Src>& f, Dst* out) {
  for (int i = 0; i < f.size(); ++i) out[i] = static_cast<Dst>(f.Get(i));
}

Result<std::string> read_external(const onnx::TensorProto& p, const std::string& base_dir, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::atoll(kv.value().c_str());
    else if (kv.key() == "length") length = std::atoll(kv.value().c_str());
  }
  const std::string& name = p.name();
  if (location.empty()) return fail(ErrorCode::kModel, "tensor '" + name + "': external data without a location");
  fs::path rel(location);
  if (rel.is_absolute()) return fail(ErrorCode::kModel, "tensor '" + name + "': external data location '" + location + "' is absolute");
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir)).lexically_normal();
  if (!base.has_filename()) base = base.parent_path();  // "dir/" -> "dir"
  fs::path full = fs::weakly_canonical(base / rel).lexically_normal();
  auto [b_end, f_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b_end != base.end())
    return fail(ErrorCode::kModel, "tensor '" + name + "': external data location '" + location + "' escapes the model's folder");
  std::ifstream in(full, std::ios::binary);
  if (!in) return fail(ErrorCode::kModel, "tensor '" + name + "': cannot open external data file " + full.string());
  in.seekg(0, std::ios::end);
  int64_t file_size = in.tellg();
  if (offset < 0 || offset > file_size) return fail(ErrorCode::kModel, "tensor '" + name + "': external data offset outside " + full.string());
  int64_t n = length < 0 ? file_size - offset : length;
  if (n != static_cast<int64_t>(expected) || offset + n > file_size)
    return fail(ErrorCode::kModel, "tensor '" + name + "': external data has " + std::to_string(n) + " bytes, expected " +
                                       std::to_string(expected));
  std::string bytes(static_cast<size_t>(n), '\0');
  in.seekg(offset);
  in.read(bytes.data(), n);
  if (!in) return fail(ErrorCode::kModel, "tensor '" + name + "': cannot read external data from " + full.string());
  return bytes;
}

}  // namespace

WeightSlab WeightSlab::with_capacity(size_t bytes) {
  WeightSlab slab;
  if (bytes == 0) return slab;
  AlignedBytes block = allocate_aligned(bytes);
  if (!block) throw std::bad_alloc();
  slab.base = std::shared_ptr<unsigned char>(block.release(), FreeDeleter{});
  slab.size = bytes;
  return slab;
}

unsigned char* WeightSlab::take(size_t bytes) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  if (!base || size - used < rounded) return nullptr;
  unsigned char* p = base.get() + used;
  std::memset(p + bytes, 0, rounded - bytes);
  used += rounded;
  return p;
}

namespace {

// How many values the typed field of `dtype` holds (ONNX keeps 8/16-bit types and bools in
// int32_data).
int64_t typed_value_count(const onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return p.float_data_size();
    case DType::kFloat64: return p.double_data_size();
    case DType::kInt64: return p.int64_data_size();
    case DType::kInt32:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16: return p.int32_data_size();
    case DType::kUndefined: break;
  }
  return 0;
}

}  // namespace

Result<HostTensor> tensor_from_onnx(const onnx::TensorProto& p, const std::string& base_dir, WeightSlab* slab,
                                    const std::string& kind) {
  const std::string name = p.name().empty() ? std::string("<unnamed>") : p.name();
  auto dtype = dtype_from_onnx(p.data_type());
  if (!dtype) return fail(dtype.error().code, kind + " '" + name + "': " + dtype.error().message);
  if (*dtype == DType::kUndefined) return fail(ErrorCode::kModel, kind + " '" + name + "' has no element type");
  SD_ASSIGN_OR_RETURN(Shape shape, shape_from_dims(p.dims(), name));
  const int64_t n = shape.numel();
  const size_t bytes = static_cast<size_t>(n) * dtype_size(*dtype);
  auto size_error = [&](int64_t got) {
    return fail(ErrorCode::kModel, kind + " '" + name + "' has " + std::to_string(got) + " values for shape " + shape.str());
  };
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    SD_ASSIGN_OR_RETURN(std::string data, read_external(p, base_dir, bytes));
    return HostTensor::copy_of(*dtype, shape, data.data());
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes) return size_error(static_cast<int64_t>(p.raw_data().size() / std::max<size_t>(1, dtype_size(*dtype))));
    if (unsigned char* dst = slab ? slab->take(bytes) : nullptr) {
      std::memcpy(dst, p.raw_data().data(), bytes);
      return HostTensor::over(*dtype, shape, slab->base, dst);
    }
    return HostTensor::copy_of(*dtype, shape, p.raw_data().data());
  }
  // The typed fields (float_data, int64_data, ...): check that the values are there before
  // allocating what the dims declare (a few bytes of file can declare 100 GB).
  const int64_t present = typed_value_count(p, *dtype);
  if (present != n) {
    return fail(ErrorCode::kModel, kind + " '" + name + "' declares " + human_bytes(bytes) + " (" + shape.str() + " " +
                                       dtype_name(*dtype) + ") but holds " +
                                       human_bytes(static_cast<uint64_t>(present) * dtype_size(*dtype)));
  }
  HostTensor t(*dtype, shape);
  switch (*dtype) {
    case DType::kFloat32: copy_field(p.float_data(), t.as<float>()); break;
    case DType::kFloat64: copy_field(p.double_data(), t.as<double>()); break;
    case DType::kInt64: copy_field(p.int64_data(), t.as<int64_t>()); break;
    case DType::kInt32: copy_field(p.int32_data(), t.as<int32_t>()); break;
    case DType::kInt8: copy_field(p.int32_data(), t.as<int8_t>()); break;
    case DType::kUInt8: copy_field(p.int32_data(), t.as<uint8_t>()); break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) t.as<bool>()[i] = p.int32_data(static_cast<int>(i)) != 0;
      break;
    case DType::kFloat16:
    case DType::kBFloat16: copy_field(p.int32_data(), t.as<uint16_t>()); break;
    case DType::kUndefined: break;  // refused above
  }
  return t;
}

Result<HostTensor> read_tensor_pb(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kModel, "cannot open tensor file " + path);
  onnx::TensorProto p;
  if (!p.ParseFromIstream(&in)) return fail(ErrorCode::kModel, "tensor file " + path + " is not a TensorProto");
  auto t = tensor_from_onnx(p, fs::path(path).parent_path().string());
  if (!t) return fail(t.error().code, path + ": " + t.error().message);
  return t;
}

Result<Attributes> attributes_from_onnx(const onnx::NodeProto& node, const std::string& base_dir) {
  Attributes attrs;
  for (const auto& a : node.attribute()) {
    Attribute out;
    switch (a.type()) {
      case onnx::AttributeProto::INT: out.kind = Attribute::Kind::kInt; out.i = a.i(); break;
      case onnx::AttributeProto::FLOAT: out.kind = Attribute::Kind::kFloat; out.f = a.f(); break;
      case onnx::AttributeProto::STRING: out.kind = Attribute::Kind::kString; out.s = a.s(); break;
      case onnx::AttributeProto::INTS:
        out.kind = Attribute::Kind::kInts;
        out.ints.assign(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        out.kind = Attribute::Kind::kFloats;
        out.floats.assign(a.floats().begin(), a.floats().end());
        break;
      case onnx::AttributeProto::STRINGS:
        out.kind = Attribute::Kind::kStrings;
        out.strings.assign(a.strings().begin(), a.strings().end());
        break;
      case onnx::AttributeProto::TENSOR: {
        out.kind = Attribute::Kind::kTensor;
        SD_ASSIGN_OR_RETURN(out.t, tensor_from_onnx(a.t(), base_dir));
        break;
      }
      default:
        return fail(ErrorCode::kUnsupported, "attribute '" + a.name() + "' of node '" + node.name() + "' (" + node.op_type() +
                                                 ") has a type the engine does not support (graphs, sparse tensors)");
    }
    attrs.set(a.name(), std::move(out));
  }
  return attrs;
}

namespace {

Status declared_type(const onnx::ValueInfoProto& vi, Value& v) {
  if (!vi.type().has_tensor_type()) return fail(ErrorCode::kUnsupported, "value '" + vi.name() + "' is not a tensor");
  const auto& tt = vi.type().tensor_type();
  auto dt = dtype_from_onnx(tt.elem_type());
  if (!dt) return fail(dt.error().code, "value '" + vi.name() + "': " + dt.error().message);
  v.dtype = *dt;
  if (tt.has_shape()) {
    if (tt.shape().dim_size() > Shape::kMaxRank) return fail(ErrorCode::kUnsupported, "value '" + vi.name() + "' has too high a rank");
    v.shape = Shape();
    for (const auto& d : tt.shape().dim())
      v.shape.dims[static_cast<size_t>(v.shape.rank++)] = d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1;
    v.shape_known = true;
  }
  return ok();
}

}  // namespace

Result<Graph> graph_from_onnx(const onnx::ModelProto& model, const std::string& base_dir, const std::string& what) {
  Graph g;
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = static_cast<int>(op.version());
  if (g.opset == 0) return fail(ErrorCode::kModel, what + ": no opset for the default ONNX domain");
  if (g.opset < 1 || g.opset > 21)
    return fail(ErrorCode::kUnsupported, what + ": opset " + std::to_string(g.opset) + " is not supported (1 to 21)");
  const auto& gp = model.graph();
  std::unordered_map<std::string, int> by_name;
  auto value_of = [&](const std::string& name) -> int {
    auto it = by_name.find(name);
    if (it != by_name.end()) return it->second;
    Value v;
    v.name = name;
    int id = g.add_value(std::move(v));
    by_name.emplace(name, id);
    return id;
  };
  std::vector<bool> produced;
  auto mark_produced = [&](int id) {
    if (produced.size() <= static_cast<size_t>(id)) produced.resize(static_cast<size_t>(id) + 1, false);
    produced[static_cast<size_t>(id)] = true;
  };
  size_t raw_bytes = 0;
  for (const auto& init : gp.initializer())
    if (init.data_location() != onnx::TensorProto::EXTERNAL) raw_bytes += (init.raw_data().size() + 63) / 64 * 64;
  WeightSlab slab = WeightSlab::with_capacity(raw_bytes);
  for (const auto& init : gp.initializer()) {
    if (by_name.count(init.name())) return fail(ErrorCode::kModel, what + ": initializer '" + init.name() + "' is defined twice");
    auto t = tensor_from_onnx(init, base_dir, &slab, "initializer");
    if (!t) return fail(t.error().code, what + ": " + t.error().message);
    int id = value_of(init.name());
    Value& v = g.values[static_cast<size_t>(id)];
    v.dtype = t->dtype();
    v.shape = t->shape();
    v.shape_known = true;
    v.constant = std::move(*t);
    mark_produced(id);
  }
  for (const auto& in : gp.input()) {
    int id = value_of(in.name());
    if (g.values[static_cast<size_t>(id)].constant) continue;  // an initializer with a default: a constant here
    if (auto st = declared_type(in, g.values[static_cast<size_t>(id)]); !st) return fail(st.error().code, what + ": " + st.error().message);
    g.inputs.push_back(id);
    mark_produced(id);
  }
  for (const auto& vi : gp.value_info()) {
    int id = value_of(vi.name());
    Value& v = g.values[static_cast<size_t>(id)];
    if (!v.constant) (void)declared_type(vi, v);  // hints only
  }

  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(i) : np.name();
    if (!n.domain.empty())
      return fail(ErrorCode::kUnsupported, what + ": " + n.op_type + " node '" + n.name + "' is in domain '" + n.domain +
                                               "', which the engine does not support");
    auto attrs = attributes_from_onnx(np, base_dir);
    if (!attrs) return fail(attrs.error().code, what + ": " + attrs.error().message);
    n.attrs = std::move(*attrs);
    for (const auto& in : np.input()) n.inputs.push_back(in.empty() ? -1 : value_of(in));
    for (const auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int id = value_of(out);
      if (id < static_cast<int>(produced.size()) && produced[static_cast<size_t>(id)])
        return fail(ErrorCode::kModel, what + ": value '" + out + "' is produced twice (by node '" + n.name + "')");
      mark_produced(id);
      n.outputs.push_back(id);
    }
    nodes.push_back(std::move(n));
  }
  produced.resize(g.values.size(), false);
  for (const auto& n : nodes)
    for (int in : n.inputs)
      if (in >= 0 && !produced[static_cast<size_t>(in)])
        return fail(ErrorCode::kModel, what + ": input '" + g.values[static_cast<size_t>(in)].name + "' of node '" + n.name +
                                           "' is not produced by any node, initializer or graph input");
  for (const auto& out : gp.output()) {
    auto it = by_name.find(out.name());
    if (it == by_name.end() || !produced[static_cast<size_t>(it->second)])
      return fail(ErrorCode::kModel, what + ": graph output '" + out.name() + "' is never produced");
    Value& v = g.values[static_cast<size_t>(it->second)];
    if (!v.shape_known) (void)declared_type(out, v);
    g.outputs.push_back(it->second);
  }

  // Topological order (Kahn); what is left over sits on a cycle.
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int o : nodes[i].outputs)
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(i);
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> consumers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int in : nodes[i].inputs)
      if (in >= 0 && producer[static_cast<size_t>(in)] >= 0) {
        pending[i]++;
        consumers[static_cast<size_t>(producer[static_cast<size_t>(in)])].push_back(static_cast<int>(i));
      }
  std::queue<int> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(static_cast<int>(i));
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0) return fail(ErrorCode::kModel, what + ": the graph has a cycle through node '" + nodes[i].name + "'");
  }
  g.nodes.reserve(nodes.size());
  for (int i : order) g.nodes.push_back(std::move(nodes[static_cast<size_t>(i)]));
  return g;
}

}  // namespace sd::native

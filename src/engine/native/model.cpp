// NativeModel::load: parse the ONNX protobuf, build the graph, check every op is supported,
// run the passes.
#include <chrono>
#include <filesystem>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include "core/log.h"
#include "engine/native/onnx/onnx_import.h"
#include "engine/native/op_registry.h"
#include "engine/native/passes/passes.h"
#include "engine/native/session.h"

namespace sd::native {
namespace {

class LoadedModel final : public NativeModel {
 public:
  const std::vector<IoInfo>& inputs() const override { return inputs_; }
  const std::vector<IoInfo>& outputs() const override { return outputs_; }
  const Graph& graph() const override { return graph_; }

  Graph graph_;
  std::vector<IoInfo> inputs_, outputs_;
};

Status check_supported(const Graph& g, const OpRegistry& registry, const std::string& what) {
  for (const Node& n : g.nodes)
    if (!registry.find(n.op_type, g.opset) || n.op_type == "FusedConv")
      return fail(ErrorCode::kModel, what + ": op " + n.op_type + " (node '" + n.name + "', opset " + std::to_string(g.opset) +
                                         ") is not supported by the native engine");
  return ok();
}

Result<std::shared_ptr<const NativeModel>> build(const onnx::ModelProto& proto, const std::string& base_dir,
                                                 const std::string& what, const LoadOptions& options) {
  auto model = std::make_shared<LoadedModel>();
  auto graph = graph_from_onnx(proto, base_dir, what);
  if (!graph) return tl::unexpected(graph.error());
  model->graph_ = std::move(*graph);
  Graph& g = model->graph_;
  const OpRegistry& registry = builtin_op_registry();
  SD_TRY(check_supported(g, registry, what));
  if (options.optimize) {
    auto prefix = [&](Error e) { return with_context(std::move(e), what); };
    auto folded = passes::fold_constants(g, registry);
    if (!folded) return tl::unexpected(prefix(folded.error()));
    auto bn = passes::fold_batchnorm_into_conv(g);
    if (!bn) return tl::unexpected(prefix(bn.error()));
    passes::fuse_conv_activations(g);
    passes::remove_dead_nodes(g);
  }
  for (int v : g.inputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    if (!val.shape_known) return fail(ErrorCode::kModel, what + ": input '" + val.name + "' has no declared shape");
    model->inputs_.push_back({val.name, val.dtype, val.shape});
  }
  for (int v : g.outputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    model->outputs_.push_back({val.name, val.dtype, val.shape_known ? val.shape : Shape{}});
  }
  return std::shared_ptr<const NativeModel>(std::move(model));
}

Result<onnx::ModelProto> parse(const void* data, size_t size, const std::string& what) {
  onnx::ModelProto proto;
  google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(size));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) || !proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return fail(ErrorCode::kModel, what + " is not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
  if (!proto.has_graph()) return fail(ErrorCode::kModel, what + " has no graph");
  return proto;
}

}  // namespace

Result<std::shared_ptr<const NativeModel>> NativeModel::load(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kModel, "cannot open model " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto base = std::filesystem::path(path).parent_path().string();
  SD_ASSIGN_OR_RETURN(onnx::ModelProto proto, parse(bytes.data(), bytes.size(), "model " + path));
  try {
    return build(proto, base, "model " + path, options);
  } catch (const std::exception& e) {
    return fail(ErrorCode::kModel, "model " + path + ": loading failed: " + e.what());
  }
}

Result<std::shared_ptr<const NativeModel>> NativeModel::load_from_bytes(const void* data, size_t size, const std::string& base_dir,
                                                                        const LoadOptions& options) {
  SD_ASSIGN_OR_RETURN(onnx::ModelProto proto, parse(data, size, "model (in memory)"));
  try {
    return build(proto, base_dir, "model (in memory)", options);
  } catch (const std::exception& e) {
    return fail(ErrorCode::kModel, std::string("model (in memory): loading failed: ") + e.what());
  }
}

}  // namespace sd::native

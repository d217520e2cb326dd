// NativeModel::load: parse the ONNX protobuf, build the graph, check every op is supported,
// run the passes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <filesystem>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include "engine/native/cpu/int8_support.h"
#include "engine/native/onnx/onnx_import.h"
#include "engine/native/op_registry.h"
#include "engine/native/passes/passes.h"
#include "engine/native/quant_params.h"
#include "engine/native/session.h"

namespace sd::native {
namespace {

class LoadedModel final : public NativeModel {
 public:
  const std::vector<IoInfo>& inputs() const override { return inputs_; }
  const std::vector<IoInfo>& outputs() const override { return outputs_; }
  const Graph& graph() const override { return graph_; }
  const std::vector<std::string>& notes() const override { return notes_; }

  Graph graph_;
  std::vector<IoInfo> inputs_, outputs_;
  std::vector<std::string> notes_;
};

Status check_supported(const Graph& g, const OpRegistry& registry, const std::string& what) {
  for (const Node& n : g.nodes)
    if (!registry.find(n.op_type, g.opset) || n.op_type == "FusedConv" || n.op_type == "BinExpectation" || n.op_type == "Int8Conv" ||
        n.op_type == "Int8Table" || n.op_type == "Int8AddTables" || n.op_type == "Bf16Concat")  // internal ops
      return fail(ErrorCode::kModel, what + ": op " + n.op_type + " (node '" + n.name + "', opset " + std::to_string(g.opset) +
                                         ") is not supported by the native engine");
  return ok();
}

Result<std::shared_ptr<const NativeModel>> build(const onnx::ModelProto& proto, const std::string& base_dir,
                                                 const std::string& what, const LoadOptions& options) {
  auto model = std::make_shared<LoadedModel>();
  SD_TRY(check_zero_point_types(proto.graph(), what));
  auto graph = graph_from_onnx(proto, base_dir, what);
  if (!graph) return tl::unexpected(graph.error());
  model->graph_ = std::move(*graph);
  Graph& g = model->graph_;
  const OpRegistry& registry = builtin_op_registry();
  SD_TRY(check_supported(g, registry, what));
  SD_TRY(check_quantization(g, what));
  if (options.optimize) {
    auto prefix = [&](Error e) { return with_context(std::move(e), what); };
    if (options.fuse_qdq) {  // before folding dequantizes the weights
      int inexact = 0;
      passes::fuse_qdq_convolutions(g, options.int8_exact.value_or(int8_dot_products_exact()), &inexact);
      // Such a model runs little faster than its float original would here (the 3x3 stride-1 layers
      // by the int16 Winograd, the rest in float32): said once, at load.
      if (inexact > 0)
        model->notes_.push_back(std::to_string(inexact) + " quantized convolution" + (inexact == 1 ? "" : "s") +
                                " computed in float32 or 16-bit integers on this processor: without AVX-512 VNNI its int8 kernels are exact only "
                                "with 7-bit weights (`streamdet quantize --reduce-range` writes them)");
      passes::keep_int8_through_data_ops(g);
    }
    auto folded = passes::fold_constants(g, registry);
    if (!folded) return tl::unexpected(prefix(folded.error()));
    auto bn = passes::fold_batchnorm_into_conv(g);
    if (!bn) return tl::unexpected(prefix(bn.error()));
    passes::fuse_bin_expectation(g);
    passes::fuse_conv_activations(g);
    passes::remove_dead_nodes(g);
  }
  if (options.precision == Precision::kBf16) {
    mark_bf16_convolutions(g);
    // A convolution forced to float32 (candidate 1) cannot read bf16.
    if (options.bf16_tensors && (options.conv_candidate == kTimedCandidate || options.conv_candidate == 0)) keep_bf16_tensors(g, options.conv3x3 != Conv3x3Choice::kOneDnn);
  }
  mark_conv3x3_choice(g, options.conv3x3);
  mark_conv_candidate(g, options.conv_candidate);
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

// The model file mapped read-only and pre-faulted (MAP_POPULATE): no copy into a buffer and no
// page fault per 4 KiB while protobuf reads it (a 13 MB model: ~45 ms less on our VMs).
class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(ErrorCode::kModel, "cannot open model " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      ::close(fd);
      return fail(ErrorCode::kModel, "cannot read model " + path + ": " + std::strerror(errno));
    }
    MappedFile f;
    f.size_ = static_cast<size_t>(st.st_size);
    if (f.size_ > 0) {
      void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        return fail(ErrorCode::kModel, "cannot read model " + path + ": " + std::strerror(errno));
      }
      f.data_ = p;
    }
    ::close(fd);
    return f;
  }
  MappedFile(MappedFile&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile() {
    if (data_) munmap(data_, size_);
  }
  const void* data() const { return data_ ? data_ : ""; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

Result<std::shared_ptr<const NativeModel>> NativeModel::load(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return fail(ErrorCode::kModel, "model " + path + " is a directory");
  SD_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  auto base = std::filesystem::path(path).parent_path().string();
  SD_ASSIGN_OR_RETURN(onnx::ModelProto proto, parse(file.data(), file.size(), "model " + path));
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

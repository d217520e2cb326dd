// ONNX protobuf (Debian's libonnx-dev) -> the native engine's types: tensors, attributes, graphs.
// Every malformed input is an error naming the file and what is wrong, never a crash.
#pragma once

#include <string>

#include "core/error.h"
#include "engine/native/graph.h"

namespace onnx {
class TensorProto;
class NodeProto;
class ModelProto;
}  // namespace onnx

namespace sd::native {

// Where a model's initializers go: one allocation for all of them (huge pages, one fault per
// 2 MiB instead of one per 4 KiB page, a third of a YOLOv8n load), handed out in 64-byte-aligned,
// zero-padded pieces.
struct WeightSlab {
  std::shared_ptr<unsigned char> base;
  size_t size = 0, used = 0;
  static WeightSlab with_capacity(size_t bytes);
  // Bytes for one tensor, or null when the slab is full.
  unsigned char* take(size_t bytes);
};

// A TensorProto's value. External data is read from `base_dir`; a location that is absolute or
// escapes base_dir is refused. Sizes are checked against the dims.
// With a slab, raw data is copied into it. `kind` names the tensor in errors ("initializer").
Result<HostTensor> tensor_from_onnx(const onnx::TensorProto& proto, const std::string& base_dir,
                                    WeightSlab* slab = nullptr, const std::string& kind = "tensor");
// A file holding one serialized TensorProto (ONNX's test data: test_data_set_0/input_0.pb).
Result<HostTensor> read_tensor_pb(const std::string& path);
Result<Attributes> attributes_from_onnx(const onnx::NodeProto& node, const std::string& base_dir);

// The model's main graph: values, nodes in topological order (a cycle is an error), initializers
// and Constant nodes as constants. `what` names the model in messages.
Result<Graph> graph_from_onnx(const onnx::ModelProto& model, const std::string& base_dir, const std::string& what);

}  // namespace sd::native

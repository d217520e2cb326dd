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

// A TensorProto's value. External data is read from `base_dir`; a location that is absolute or
// escapes base_dir is refused. Sizes are checked against the dims.
Result<HostTensor> tensor_from_onnx(const onnx::TensorProto& proto, const std::string& base_dir);
// A file holding one serialized TensorProto (ONNX's test data: test_data_set_0/input_0.pb).
Result<HostTensor> read_tensor_pb(const std::string& path);
Result<Attributes> attributes_from_onnx(const onnx::NodeProto& node, const std::string& base_dir);

// The model's main graph: values, nodes in topological order (a cycle is an error), initializers
// and Constant nodes as constants. `what` names the model in messages.
Result<Graph> graph_from_onnx(const onnx::ModelProto& model, const std::string& base_dir, const std::string& what);

}  // namespace sd::native

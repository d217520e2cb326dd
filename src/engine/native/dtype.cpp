#include "engine/native/dtype.h"

#include <string>

namespace sd::native {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kUndefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

// Numbering of onnx::TensorProto_DataType (onnx.proto).
Result<DType> dtype_from_onnx(int32_t t) {
  switch (t) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    case 6: return DType::kInt32;
    case 7: return DType::kInt64;
    case 9: return DType::kBool;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    default: return fail(ErrorCode::kUnsupported, "ONNX element type " + std::to_string(t) + " is not supported");
  }
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::kFloat32: return 1;
    case DType::kUInt8: return 2;
    case DType::kInt8: return 3;
    case DType::kInt32: return 6;
    case DType::kInt64: return 7;
    case DType::kBool: return 9;
    case DType::kFloat16: return 10;
    case DType::kBFloat16: return 16;
    case DType::kFloat64: return 11;
    case DType::kUndefined: return 0;
  }
  return 0;
}

}  // namespace sd::native

// Element types the native engine knows. ONNX's numbering is mapped in dtype.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/error.h"

namespace sd::native {

enum class DType : uint8_t { kUndefined, kFloat32, kFloat64, kFloat16, kInt8, kUInt8, kInt32, kInt64, kBool,
                          kBFloat16 };  // bf16: only between the CPU's bf16 convolutions (--precision bf16), never a model's

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "int64", ...
// onnx::TensorProto::DataType value -> DType; an unsupported one is a kUnsupported error.
Result<DType> dtype_from_onnx(int32_t onnx_elem_type);
int32_t dtype_to_onnx(DType t);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }

}  // namespace sd::native

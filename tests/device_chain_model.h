// The small model the device-backend tests run (graph_replay_test.cpp, many_streams_device_test.cpp):
// x [N, 4, H, W] -> Conv -> Relu -> Add(const) -> Sigmoid -> y, N, H and W dynamic, loaded without
// the graph passes; and a random float32 input for it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::test {

inline native::HostTensor random_tensor(const Shape& shape, uint32_t seed) {
  native::HostTensor t(native::DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = u(rng);
  return t;
}

inline std::shared_ptr<const native::NativeModel> chain_model() {
  OnnxBuilder b;
  b.input("x", {-1, 4, -1, -1});
  b.random_initializer("w", {8, 4, 3, 3}, -0.5f, 0.5f);
  b.random_initializer("bias", {8}, -0.1f, 0.1f);
  b.random_initializer("k", {1, 8, 1, 1}, -1.f, 1.f);
  auto* c = b.node("Conv", {"x", "w", "bias"}, {"c"});
  OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("Add", {"r", "k"}, {"a"});
  b.node("Sigmoid", {"a"}, {"y"});
  b.output("y");
  const std::string bytes = b.bytes();
  native::LoadOptions lo;
  lo.optimize = false;
  auto m = native::NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  return m ? *m : nullptr;
}

}  // namespace sd::test

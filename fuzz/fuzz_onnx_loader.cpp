// libFuzzer target: any bytes as an ONNX model. Loading must fail cleanly or succeed; a model that
// loads is planned and run once on zeros when its input is small. Crashes, leaks, UB and
// sanitizer reports are the findings (each one becomes a test in tests/native_loader_test.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/native/session.h"

using namespace sd::native;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = NativeModel::load_from_bytes(data, size, "/nonexistent-fuzz-dir");
  if (!model) return 0;
  const auto& inputs = (*model)->inputs();
  std::vector<HostTensor> tensors;
  std::vector<TensorRef> refs;
  for (const auto& in : inputs) {
    if (!in.shape.is_static() || in.shape.numel() > (1 << 16) || in.dtype == DType::kUndefined || in.dtype == DType::kFloat16) return 0;
    tensors.emplace_back(in.dtype, in.shape);
  }
  for (auto& t : tensors) refs.push_back(t.ref());
  // Small models of a few KB may describe tensors of gigabytes (Expand, Tile, ConstantOfShape):
  // refusing them cleanly is the behaviour under test, and the bound keeps each run fast.
  SessionOptions options{1};
  options.memory_limit_bytes = size_t{16} << 20;
  auto session = NativeSession::create(*model, options);
  if (!session) return 0;
  std::vector<HostTensor> outputs;
  (void)(*session)->run(refs, outputs);
  return 0;
}

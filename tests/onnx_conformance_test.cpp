// The ONNX project's own backend node tests (Debian's libonnx-testdata: one folder per test with
// model.onnx and test_data_set_*/input_N.pb, output_N.pb), run through the native engine for every
// test whose ops the engine claims (all of its nodes are in builtin_op_registry()). Outputs are
// compared as ONNX's backend runner does: rtol 1e-3, atol 1e-7 for floats, exactly otherwise.
// Cases of a claimed op that the engine refuses on purpose are listed in kExcluded with the reason
// (and in docs/native_engine.md); any other failure is a bug.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <onnx/onnx_pb.h>

#include "engine/native/onnx/onnx_import.h"
#include "engine/native/op_registry.h"
#include "engine/native/session.h"

namespace sd::native {
namespace {
namespace fs = std::filesystem;

const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";

// Test folder -> why the engine does not run it.
const std::map<std::string, std::string> kExcluded = {
#include "onnx_conformance_exclusions.inc"
};

std::vector<std::string> claimed_tests() {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(kNodeTests, ec)) return names;
  const OpRegistry& reg = builtin_op_registry();
  for (const auto& e : fs::directory_iterator(kNodeTests, ec)) {
    std::ifstream in(e.path() / "model.onnx", std::ios::binary);
    onnx::ModelProto m;
    if (!in || !m.ParseFromIstream(&in)) continue;
    int opset = 0;
    for (const auto& o : m.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
    bool claimed = m.graph().node_size() > 0;
    for (const auto& n : m.graph().node())
      if (!(n.domain().empty() || n.domain() == "ai.onnx") || !reg.find(n.op_type(), opset)) claimed = false;
    if (claimed) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string compare(const HostTensor& got, const HostTensor& want, const std::string& what) {
  if (got.dtype() != want.dtype()) return what + ": type " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape()) return what + ": shape " + got.shape().str() + ", expected " + want.shape().str();
  if (want.dtype() == DType::kFloat32 || want.dtype() == DType::kFloat64) {
    auto g = got.to_float_vector(), w = want.to_float_vector();
    if (want.dtype() == DType::kFloat64) {
      for (int64_t i = 0; i < want.numel(); ++i) g[static_cast<size_t>(i)] = static_cast<float>(got.as<double>()[i]), w[static_cast<size_t>(i)] = static_cast<float>(want.as<double>()[i]);
    }
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (std::isinf(w[i]) && g[i] == w[i]) continue;
      if (!(std::fabs(g[i] - w[i]) <= 1e-7 + 1e-3 * std::fabs(w[i])))
        return what + ": element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
    }
    return "";
  }
  if (std::memcmp(got.data(), want.data(), want.bytes()) != 0) return what + ": values differ";
  return "";
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesTheReferenceOutputs) {
  const std::string name = GetParam();
  if (auto it = kExcluded.find(name); it != kExcluded.end()) GTEST_SKIP() << "excluded: " << it->second;
  const fs::path dir = fs::path(kNodeTests) / name;
  auto model = NativeModel::load((dir / "model.onnx").string());
  ASSERT_TRUE(model) << model.error().message;
  auto session = NativeSession::create(*model, SessionOptions{2});
  ASSERT_TRUE(session);
  int sets = 0;
  for (int set = 0;; ++set) {
    fs::path data = dir / ("test_data_set_" + std::to_string(set));
    if (!fs::is_directory(data)) break;
    ++sets;
    std::vector<HostTensor> inputs;
    for (int i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i) {
      auto t = read_tensor_pb((data / ("input_" + std::to_string(i) + ".pb")).string());
      ASSERT_TRUE(t) << t.error().message;
      inputs.push_back(*t);
    }
    // Inputs the test gives beyond the graph's (non-constant) inputs feed initializers-with-defaults; drop them.
    inputs.resize(std::min(inputs.size(), (*model)->inputs().size()));
    std::vector<TensorRef> refs;
    for (auto& t : inputs) refs.push_back(t.ref());
    std::vector<HostTensor> outputs;
    auto st = (*session)->run(refs, outputs);
    ASSERT_TRUE(st) << st.error().message;
    for (size_t o = 0;; ++o) {
      fs::path f = data / ("output_" + std::to_string(o) + ".pb");
      if (!fs::exists(f)) break;
      auto want = read_tensor_pb(f.string());
      ASSERT_TRUE(want) << want.error().message;
      ASSERT_LT(o, outputs.size());
      std::string diff = compare(outputs[o], *want, "output " + std::to_string(o));
      EXPECT_TRUE(diff.empty()) << diff;
    }
  }
  EXPECT_GT(sets, 0);
}

INSTANTIATE_TEST_SUITE_P(Onnx, OnnxNodeTest, ::testing::ValuesIn(claimed_tests()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

TEST(OnnxConformance, TestDataIsInstalledAndCoversTheClaimedOps) {
  if (!fs::is_directory(kNodeTests)) GTEST_SKIP() << "libonnx-testdata is not installed (" << kNodeTests << "); scripts/install-deps.sh installs it";
  EXPECT_GT(claimed_tests().size(), 300u);
}

}  // namespace
}  // namespace sd::native

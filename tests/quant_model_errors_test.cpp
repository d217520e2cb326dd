// Bad quantization parameters in a model are refused at load, with one line naming the node and
// the problem, as a model error (exit 3, docs/errors.md).
#include <gtest/gtest.h>

#include <limits>

#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::OnnxBuilder;

void init_raw(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, int type, const std::string& bytes) {
  auto* t = b.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(bytes);
}

// A QDQ weight path: DequantizeLinear of int8 weights [4, 2, 1, 1] along axis 0 into a Conv.
struct QdqModel {
  std::vector<float> scales{0.1f, 0.2f, 0.3f, 0.4f};
  int zp_type = onnx::TensorProto::INT8;
  std::string zp_bytes = std::string(4, '\0');
  std::vector<int64_t> zp_dims{4};

  std::string bytes() const {
    OnnxBuilder b(13);
    b.input("x", {1, 2, 3, 3});
    init_raw(b, "w", {4, 2, 1, 1}, onnx::TensorProto::INT8, std::string(8, '\1'));
    b.initializer("w_scale", {static_cast<int64_t>(scales.size())}, scales);
    init_raw(b, "w_zero", zp_dims, zp_type, zp_bytes);
    auto* dq = b.node("DequantizeLinear", {"w", "w_scale", "w_zero"}, {"wf"});
    dq->set_name("dq_w");
    OnnxBuilder::attr_int(dq, "axis", 0);
    b.node("Conv", {"x", "wf"}, {"y"});
    b.output("y");
    return b.bytes();
  }
};

Error load_error(const std::string& bytes) {
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", LoadOptions{});
  EXPECT_FALSE(m);
  return m ? Error{} : m.error();
}

void expect_refused(const QdqModel& model, const std::string& problem) {
  Error e = load_error(model.bytes());
  EXPECT_EQ(e.code, ErrorCode::kModel) << e.message;
  EXPECT_NE(e.message.find("DequantizeLinear node 'dq_w'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(problem), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
}

TEST(QuantModelErrors, AGoodModelLoads) {
  const std::string bytes = QdqModel{}.bytes();
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", LoadOptions{});
  EXPECT_TRUE(m) << m.error().message;
}

TEST(QuantModelErrors, ZeroPointOfAnUnsupportedType) {
  QdqModel int16;
  int16.zp_type = onnx::TensorProto::INT16;
  int16.zp_bytes = std::string(8, '\0');
  expect_refused(int16, "zero point 'w_zero' is int16, must be int8, uint8 or int32");
  QdqModel f32;
  f32.zp_type = onnx::TensorProto::FLOAT;
  f32.zp_bytes = std::string(16, '\0');
  expect_refused(f32, "zero point 'w_zero' is float32");
}

TEST(QuantModelErrors, ScalesThatAreZeroNaNOrNegative) {
  QdqModel zero;
  zero.scales[2] = 0.f;
  expect_refused(zero, "scale 0 (element 2 of 4): scales must be positive and finite");
  QdqModel nan;
  nan.scales[0] = std::numeric_limits<float>::quiet_NaN();
  expect_refused(nan, "scale NaN (element 0 of 4)");
  QdqModel negative;
  negative.scales[3] = -0.5f;
  expect_refused(negative, "scale -0.5");
}

TEST(QuantModelErrors, PerChannelLengthsThatDoNotMatch) {
  QdqModel three;  // 3 scales and zero points for the 4 output channels of axis 0
  three.scales.pop_back();
  three.zp_dims = {3};
  three.zp_bytes = std::string(3, '\0');
  expect_refused(three, "3 scales for axis 0 of dimension 4");
  QdqModel zp_short;  // 4 scales, 2 zero points
  zp_short.zp_dims = {2};
  zp_short.zp_bytes = std::string(2, '\0');
  expect_refused(zp_short, "scale has 4 values, its zero point 2");
}

}  // namespace
}  // namespace sd::native

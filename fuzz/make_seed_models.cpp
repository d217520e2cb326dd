// Writes small valid ONNX models into a folder: the fuzzer's seed corpus.
#include <fstream>
#include <string>

#include "onnx_builder.h"

using sd::test::OnnxBuilder;

static void save(const std::string& dir, const std::string& name, const OnnxBuilder& b) {
  std::ofstream(dir + "/" + name, std::ios::binary) << b.bytes();
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  {
    OnnxBuilder b;
    b.input("x", {1, 3, 8, 8});
    b.random_initializer("w", {4, 3, 3, 3}, -1, 1);
    auto* c = b.node("Conv", {"x", "w"}, {"c"});
    OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
    b.node("Sigmoid", {"c"}, {"s"});
    b.node("Mul", {"c", "s"}, {"y"});
    b.output("y");
    save(dir, "conv_silu.onnx", b);
  }
  {
    OnnxBuilder b;
    b.input("x", {1, 4, 6, 6});
    b.initializer_i64("split", {2}, {1, 3});
    b.initializer_i64("shape", {3}, {1, 4, -1});
    b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
    auto* sp = b.node("Split", {"x", "split"}, {"a", "b"});
    OnnxBuilder::attr_int(sp, "axis", 1);
    auto* cat = b.node("Concat", {"b", "a"}, {"c"});
    OnnxBuilder::attr_int(cat, "axis", 1);
    b.node("Resize", {"c", "", "scales"}, {"r"});
    b.node("Reshape", {"r", "shape"}, {"t"});
    auto* sm = b.node("Softmax", {"t"}, {"y"});
    OnnxBuilder::attr_int(sm, "axis", 2);
    b.output("y");
    save(dir, "shapes.onnx", b);
  }
  {
    OnnxBuilder b;
    b.input("x", {2, 5});
    b.random_initializer("w", {5, 3}, -1, 1);
    b.node("MatMul", {"x", "w"}, {"m"});
    b.node("Shape", {"m"}, {"s"});
    b.node("ConstantOfShape", {"s"}, {"z"});
    b.node("Add", {"m", "z"}, {"y"});
    b.output("y");
    save(dir, "matmul_shape.onnx", b);
  }
  return 0;
}

#include <gtest/gtest.h>

#include <fstream>

#include <onnx/onnx_pb.h>

#include "model/model_info.h"
#include "test_util.h"

namespace sd {
namespace {

void write_onnx_with_metadata(const std::string& path) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(12);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("images");
  auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  shape->add_dim()->set_dim_value(1);
  shape->add_dim()->set_dim_value(3);
  shape->add_dim()->set_dim_param("height");
  shape->add_dim()->set_dim_param("width");
  auto* out = g->add_output();
  out->set_name("output0");
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("images");
  n->add_output("output0");
  auto add_meta = [&](const char* k, const char* v) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  };
  add_meta("names", "{0: 'person', 1: \"it's\", 2: 'car'}");
  add_meta("stride", "32");
  add_meta("imgsz", "[480, 640]");
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

TEST(ModelInfo, ReadsUltralyticsMetadataAndDeclaredShapes) {
  test::TempDir dir;
  write_onnx_with_metadata(dir.file("m.onnx"));
  auto info = inspect_model(dir.file("m.onnx"));
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->format, ModelFormat::kOnnx);
  ASSERT_EQ(info->class_names.size(), 3u);
  EXPECT_EQ(info->class_names[1], "it's");
  EXPECT_EQ(info->max_stride(), 32);
  EXPECT_EQ(info->imgsz_h, 480);
  EXPECT_EQ(info->imgsz_w, 640);
  ASSERT_EQ(info->declared_inputs.size(), 1u);
  EXPECT_EQ(info->declared_inputs[0].name, "images");
  EXPECT_EQ(info->declared_inputs[0].shape.str(), "[1, 3, ?, ?]");
}

TEST(ModelInfo, NamesMetadataAsList) {
  auto names = parse_names_metadata("['a', 'b b', 'c']");
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[1], "b b");
}

TEST(ModelInfo, ClearErrorsForBadModels) {
  test::TempDir dir;
  auto missing = inspect_model(dir.file("none.onnx"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kModel);
  EXPECT_NE(missing.error().message.find("none.onnx"), std::string::npos);

  std::ofstream(dir.file("junk.onnx")) << "\x08\x96\x01 this is not protobuf \xff\xff\xff";
  auto junk = inspect_model(dir.file("junk.onnx"));
  ASSERT_FALSE(junk);
  EXPECT_EQ(junk.error().code, ErrorCode::kModel);
  EXPECT_NE(junk.error().message.find("junk.onnx"), std::string::npos);

  std::ofstream(dir.file("m.tflite")) << "x";
  auto ext = inspect_model(dir.file("m.tflite"));
  ASSERT_FALSE(ext);
  EXPECT_NE(ext.error().message.find("extension"), std::string::npos);

  std::ofstream(dir.file("net.cfg")) << "[net]\nwidth=320\nheight=320\n[yolo]\nmask=0\nanchors=1,2\nclasses=3\n";
  auto no_weights = inspect_model(dir.file("net.cfg"));
  ASSERT_FALSE(no_weights);
  EXPECT_NE(no_weights.error().message.find("net.weights"), std::string::npos);
}

TEST(DarknetCfg, ParsesNetAndMaskedAnchors) {
  test::TempDir dir;
  std::ofstream(dir.file("y.cfg")) << "[net]\n# comment\nwidth=416\nheight=256\nchannels=3\nletter_box=1\n"
                                      "[convolutional]\nfilters=8\n"
                                      "[yolo]\nmask = 3,4,5\nanchors = 10,14, 23,27, 37,58, 81,82, 135,169, 344,319\n"
                                      "classes=80\nnum=6\nscale_x_y = 1.05\n"
                                      "[yolo]\nmask = 0,1,2\nanchors = 10,14, 23,27, 37,58, 81,82, 135,169, 344,319\n"
                                      "classes=80\nnum=6\nnew_coords=1\n";
  auto cfg = parse_darknet_cfg(dir.file("y.cfg"));
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->width, 416);
  EXPECT_EQ(cfg->height, 256);
  EXPECT_TRUE(cfg->letter_box);
  ASSERT_EQ(cfg->yolo_layers.size(), 2u);
  EXPECT_EQ(cfg->yolo_layers[0].anchors, (std::vector<float>{81, 82, 135, 169, 344, 319}));
  EXPECT_FLOAT_EQ(cfg->yolo_layers[0].scale_x_y, 1.05f);
  EXPECT_TRUE(cfg->yolo_layers[1].new_coords);
  EXPECT_EQ(cfg->yolo_layers[1].classes, 80);

  std::ofstream(dir.file("bad.cfg")) << "[net]\nwidth=416\nheight=416\n[yolo]\nmask=7\nanchors=1,2\n";
  auto bad = parse_darknet_cfg(dir.file("bad.cfg"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("mask 7"), std::string::npos);
}

}  // namespace
}  // namespace sd

// The dataset readers of `streamdet val` (eval/coco_dataset.h, eval/yolo_dataset.h): what they
// read, the one-line errors naming the file and entry or line, and the mapping of a model's
// classes to the dataset's categories.
#include <gtest/gtest.h>

#include <fstream>

#include <opencv2/imgcodecs.hpp>

#include "eval/coco_dataset.h"
#include "eval/yolo_dataset.h"
#include "test_util.h"

namespace sd::eval {
namespace {

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void write_image(const std::string& path, int w = 64, int h = 32) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  cv::imwrite(path, cv::Mat(h, w, CV_8UC3, cv::Scalar(100, 100, 100)));
}

const char* kCoco = R"({"images": [{"id": 9, "file_name": "a.png"}, {"id": 4, "file_name": "b.png"}],
  "categories": [{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}],
  "annotations": [{"id": 1, "image_id": 9, "category_id": 18, "bbox": [1, 2, 10, 20], "area": 150, "iscrowd": 0},
                  {"id": 2, "image_id": 4, "category_id": 1, "bbox": [0, 0, 30, 30], "iscrowd": 1}]})";

TEST(ValDataset, ReadsCocoInstances) {
  test::TempDir dir;
  write(dir.file("instances.json"), kCoco);
  write_image(dir.file("img/a.png"));
  write_image(dir.file("img/b.png"));
  auto ds = read_coco_dataset(dir.file("instances.json"), dir.file("img"));
  ASSERT_TRUE(ds) << ds.error().message;
  ASSERT_EQ(ds->images.size(), 2u);
  EXPECT_EQ(ds->images[0].id, 9);
  EXPECT_EQ(ds->images[1].path, dir.file("img/b.png"));
  ASSERT_EQ(ds->truth.size(), 2u);
  EXPECT_EQ(ds->truth[0].category_id, 18);
  EXPECT_DOUBLE_EQ(ds->truth[0].area, 150);  // the file's area, not the box's 200
  EXPECT_DOUBLE_EQ(ds->truth[1].area, 900);  // no area: the box's
  EXPECT_TRUE(ds->truth[1].crowd);
}

// Each bad file: kSource, one line naming the file and the entry.
TEST(ValDataset, BadCocoFilesNameTheFileAndEntry) {
  test::TempDir dir;
  write_image(dir.file("img/a.png"));
  write_image(dir.file("img/b.png"));
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"{\"images\": [}", "not JSON"},
      {"[1, 2]", "not a COCO instances file"},
      {R"({"images": [], "annotations": []})", "no \"categories\" array"},
      {R"({"images": [{"id": 1, "file_name": "zzz.png"}], "annotations": [], "categories": []})", "images[0] (id 1): no image"},
      {R"({"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 2, "category_id": 1, "bbox": [0,0,1,1]}],
          "categories": [{"id": 1, "name": "x"}]})",
       "annotations[0]: image_id 2 is not in \"images\""},
      {R"({"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 1, "category_id": 5, "bbox": [0,0,1,1]}],
          "categories": [{"id": 1, "name": "x"}]})",
       "annotations[0]: category_id 5 is not in \"categories\""},
      {R"({"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 1, "category_id": 1, "bbox": [0,0,1]}],
          "categories": [{"id": 1, "name": "x"}]})",
       "annotations[0]: \"bbox\" must be [x, y, width, height]"},
      {R"({"images": [{"id": 1, "file_name": "a.png"}, {"id": 1, "file_name": "b.png"}], "annotations": [], "categories": []})",
       "images[1]: image id 1 appears twice"},
  };
  for (const Case& c : cases) {
    write(dir.file("bad.json"), c.text);
    auto ds = read_coco_dataset(dir.file("bad.json"), dir.file("img"));
    ASSERT_FALSE(ds) << c.text;
    EXPECT_EQ(ds.error().code, ErrorCode::kSource) << c.text;
    EXPECT_NE(ds.error().message.find(dir.file("bad.json")), std::string::npos) << ds.error().message;
    EXPECT_NE(ds.error().message.find(c.expect), std::string::npos) << ds.error().message;
    EXPECT_EQ(ds.error().message.find('\n'), std::string::npos) << ds.error().message;
  }
}

TEST(ValDataset, ReadsYoloLabelsAndNames) {
  test::TempDir dir;
  write_image(dir.file("ds/images/val/a.png"), 200, 100);
  write_image(dir.file("ds/images/val/b.png"));  // no label file: no objects
  write(dir.file("ds/labels/val/a.txt"), "1 0.5 0.5 0.2 0.4\n\n0 0.1 0.2 0.3 0.2 0.2 0.6\n");
  write(dir.file("ds/data.yaml"), "path: ../ds\nval: images/val\nnames:\n  0: cat\n  1: 'traffic light'\nnc: 2\n");
  auto ds = read_yolo_dataset(dir.file("ds/data.yaml"), dir.file("ds/images/val"));
  ASSERT_TRUE(ds) << ds.error().message;
  ASSERT_EQ(ds->categories.size(), 2u);
  EXPECT_EQ(ds->categories[1].name, "traffic light");
  EXPECT_EQ(ds->categories[1].id, 1);
  ASSERT_EQ(ds->images.size(), 2u);
  ASSERT_EQ(ds->truth.size(), 2u);
  denormalize_truth(ds->truth, {{ds->images[0].id, {200, 100}}});
  const CocoTruth& t = ds->truth[0];
  EXPECT_EQ(t.category_id, 1);
  EXPECT_NEAR(t.box.x, 80, 1e-9);
  EXPECT_NEAR(t.box.y, 30, 1e-9);
  EXPECT_NEAR(t.box.w, 40, 1e-9);
  EXPECT_NEAR(t.box.h, 40, 1e-9);
  EXPECT_NEAR(t.area, 1600, 1e-9);
  // A polygon line: its bounding box.
  EXPECT_NEAR(ds->truth[1].box.x, 20, 1e-9);
  EXPECT_NEAR(ds->truth[1].box.w, 40, 1e-9);
  EXPECT_NEAR(ds->truth[1].box.h, 40, 1e-9);

  for (const char* yaml : {"names: [cat, 'traffic light']\n", "names:\n  - cat\n  - traffic light\n"}) {
    write(dir.file("ds/data.yaml"), yaml);
    auto names = read_yolo_names(dir.file("ds/data.yaml"));
    ASSERT_TRUE(names) << names.error().message;
    EXPECT_EQ(*names, (std::vector<std::string>{"cat", "traffic light"})) << yaml;
  }
}

TEST(ValDataset, BadYoloLabelLineNamesTheFileAndLine) {
  test::TempDir dir;
  write_image(dir.file("ds/images/a.png"));
  write(dir.file("ds/names.txt"), "cat\ndog\n");
  const std::string label = dir.file("ds/labels/a.txt");
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {{"0 0.5 0.5 0.1 0.1\n2 0.5 0.5 0.1 0.1\n", label + ":2: class 2 is out of range (2 classes)"},
                                   {"1 0.5 1.5 0.1 0.1\n", label + ":1: coordinate 1.5 is outside [0, 1]"},
                                   {"0 0.5 0.5 0.1\n", label + ":1: expected 'class cx cy w h'"},
                                   {"0 0.5 x 0.1 0.1\n", label + ":1: 'x' is not a number"},
                                   {"-1 0.5 0.5 0.1 0.1\n", label + ":1: class -1 is out of range"}};
  for (const Case& c : cases) {
    write(label, c.text);
    auto ds = read_yolo_dataset(dir.file("ds/names.txt"), dir.file("ds/images"));
    ASSERT_FALSE(ds) << c.text;
    EXPECT_EQ(ds.error().code, ErrorCode::kSource);
    EXPECT_NE(ds.error().message.find(c.expect), std::string::npos) << ds.error().message;
  }
}

TEST(ValDataset, ModelClassesMapByNameElseByOrder) {
  // COCO's way: the model's classes 0..2 against ids with gaps, listed in another order.
  const std::vector<std::string> model = {"person", "bicycle", "car"};
  auto by_name = map_model_classes(model, {{3, "car"}, {1, "person"}});
  ASSERT_TRUE(by_name);
  EXPECT_TRUE(by_name->by_name);
  EXPECT_EQ(by_name->category_of_class, (std::vector<int64_t>{1, -1, 3}));
  // Names that differ, counts equal: by order.
  auto by_order = map_model_classes(model, {{10, "a"}, {20, "b"}, {30, "c"}});
  ASSERT_TRUE(by_order);
  EXPECT_FALSE(by_order->by_name);
  EXPECT_EQ(by_order->category_of_class, (std::vector<int64_t>{10, 20, 30}));
  // Neither: a usage error naming both.
  auto neither = map_model_classes(model, {{10, "a"}, {20, "b"}});
  ASSERT_FALSE(neither);
  EXPECT_EQ(neither.error().code, ErrorCode::kUsage);
  EXPECT_NE(neither.error().message.find("3 classes (person, bicycle, car"), std::string::npos) << neither.error().message;
}

}  // namespace
}  // namespace sd::eval

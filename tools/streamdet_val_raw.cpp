// streamdet_val_raw: `streamdet val`'s figures from another runtime's raw outputs, to tell an
// accuracy difference of the engine from one of the pre- or postprocessing (bench/val_against_ort.sh).
//   streamdet_val_raw inputs --model M --data instances.json --images DIR --out IN_DIR [--max-images N]
//     writes each image's network input, preprocessed as `streamdet val` does it, as raw float32
//     IN_DIR/<image id>.f32 and prints the input shape (1x3xHxW)
//   streamdet_val_raw eval --model M --data instances.json --images DIR --outputs OUT_DIR [--max-images N]
//     reads another runtime's first output for each image (OUT_DIR/<image id>.f32, raw float32),
//     runs it through streamdet's postprocessing (decode, NMS, map back) and the COCO metric, and
//     prints its 12 figures beside those of streamdet's own engine on the same inputs, with the
//     largest difference between the two engines' raw outputs.
// Models with one output only; val's defaults (conf 0.001, NMS IoU 0.7, 300 boxes).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/val_command.h"
#include "core/frame.h"
#include "eval/coco_dataset.h"
#include "eval/coco_eval.h"
#include "postprocess/postprocessor.h"
#include "preprocess/letterbox.h"
#include "runtime/detector.h"
#include "sources/image_source.h"

namespace {

struct Args {
  sd::ValOptions val;
  std::string dir;  // IN_DIR or OUT_DIR
};

int report(const sd::Error& e) {
  std::fprintf(stderr, "streamdet_val_raw: %s\n", e.message.c_str());
  return sd::exit_code_for(e.code);
}

void add_results(const sd::Detections& dets, int64_t image_id, const sd::eval::ClassMapping& mapping,
                 std::vector<sd::eval::CocoResult>& out) {
  for (const sd::Detection& d : dets) {
    if (d.class_id < 0 || static_cast<size_t>(d.class_id) >= mapping.category_of_class.size()) continue;
    const int64_t category = mapping.category_of_class[static_cast<size_t>(d.class_id)];
    if (category < 0) continue;
    const double x1 = d.x1, y1 = d.y1, x2 = d.x2, y2 = d.y2;
    out.push_back({image_id, category, {x1, y1, x2 - x1, y2 - y1}, static_cast<double>(d.score)});
  }
}

void print_stats(const char* who, const sd::eval::CocoMetrics& m) {
  std::printf("%-12s", who);
  for (double s : m.stats) std::printf(" %.4f", s);
  std::printf("\n");
}

int run(bool eval_mode, const Args& a) {
  namespace fs = std::filesystem;
  auto ds = sd::eval::read_coco_dataset(a.val.data, a.val.images);
  if (!ds) return report(ds.error());
  if (a.val.max_images >= 0 && static_cast<size_t>(a.val.max_images) < ds->images.size())
    ds->images.resize(static_cast<size_t>(a.val.max_images));
  auto det = sd::load_detector(a.val.model, cv::Size());
  if (!det) return report(det.error());
  auto mapping = sd::eval::map_model_classes(det->class_names, ds->categories);
  if (!mapping) return report(mapping.error());
  sd::Postprocessor post(det->decoder, det->decode, det->nms);
  sd::Tensor input(sd::Shape{1, 3, det->input_size.height, det->input_size.width});
  sd::PreprocessScratch scratch;
  std::vector<sd::Tensor> outputs;
  std::vector<sd::eval::CocoResult> ours, theirs;
  double max_diff = 0;
  if (!eval_mode) fs::create_directories(a.dir);
  // The images read as `streamdet val` reads them.
  std::vector<std::string> files;
  for (const auto& image : ds->images) files.push_back(image.path);
  auto source = sd::ImageSource::open(a.val.images, files, sd::SourceOptions{});
  if (!source) return report(source.error());
  sd::Frame frame;
  for (const auto& image : ds->images) {
    auto more = (*source)->read(frame);
    if (!more) return report(more.error());
    const cv::Mat& bgr = frame.image;
    const sd::LetterboxTransform transform = sd::preprocess_frame(bgr, det->input_size, det->preprocess, input.data(), scratch);
    const std::string raw = (fs::path(a.dir) / (std::to_string(image.id) + ".f32")).string();
    if (!eval_mode) {
      std::ofstream f(raw, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.numel() * sizeof(float)));
      if (!f) return report({sd::ErrorCode::kOutput, "cannot write " + raw});
      continue;
    }
    if (auto st = det->first_context->infer(input.view(), outputs); !st) return report(st.error());
    if (outputs.size() != 1) return report({sd::ErrorCode::kUnsupported, "models with one output only"});
    std::vector<sd::TensorView> views = {outputs[0].view()};
    sd::Detections dets;
    post.run(views, 0, dets);
    for (auto& d : dets) transform.map_back(d);
    add_results(dets, image.id, *mapping, ours);
    // The other runtime's output in place of ours: same shape, same postprocessing.
    std::ifstream f(raw, std::ios::binary);
    sd::Tensor other(outputs[0].shape());
    f.read(reinterpret_cast<char*>(other.data()), static_cast<std::streamsize>(other.numel() * sizeof(float)));
    if (!f || f.gcount() != static_cast<std::streamsize>(other.numel() * sizeof(float)))
      return report({sd::ErrorCode::kSource, raw + ": expected " + std::to_string(other.numel()) + " float32 values"});
    for (int64_t i = 0; i < other.numel(); ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(other.data()[i] - outputs[0].data()[i])));
    views = {other.view()};
    post.run(views, 0, dets);
    for (auto& d : dets) transform.map_back(d);
    add_results(dets, image.id, *mapping, theirs);
  }
  if (!eval_mode) {
    std::printf("1x3x%dx%d\n", det->input_size.height, det->input_size.width);
    return 0;
  }
  std::vector<int64_t> image_ids, category_ids;
  for (const auto& image : ds->images) image_ids.push_back(image.id);
  for (const auto& c : ds->categories) category_ids.push_back(c.id);
  const auto m_ours = sd::eval::evaluate_coco(image_ids, category_ids, ds->truth, ours);
  const auto m_theirs = sd::eval::evaluate_coco(image_ids, category_ids, ds->truth, theirs);
  std::printf("%zu images; largest |streamdet - other| over the raw outputs: %.6g\n", ds->images.size(), max_diff);
  std::printf("%-12s AP     AP50   AP75   APs    APm    APl    AR1    AR10   AR100  ARs    ARm    ARl\n", "engine");
  print_stats("streamdet", m_ours);
  print_stats("other", m_theirs);
  std::printf("AP difference (streamdet - other): %+.5f\n", m_ours.stats[0] - m_theirs.stats[0]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamdet_val_raw: streamdet val's figures from another runtime's raw outputs"};
  app.require_subcommand(1);
  Args a;
  sd::set_val_defaults(a.val);
  a.val.model.threads = 2;
  for (const char* name : {"inputs", "eval"}) {
    auto* cmd = app.add_subcommand(name, std::string(name) == "inputs" ? "write each image's network input (raw float32)"
                                                                        : "the metric from another runtime's outputs, beside ours");
    cmd->add_option("-m,--model", a.val.model.model, "ONNX model")->required();
    cmd->add_option("--data", a.val.data, "COCO instances JSON")->required();
    cmd->add_option("--images", a.val.images, "image folder")->required();
    cmd->add_option(std::string(name) == "inputs" ? "--out" : "--outputs", a.dir, "folder of <image id>.f32 files")->required();
    cmd->add_option("--max-images", a.val.max_images, "the first N images only");
    cmd->add_option("--threads", a.val.model.threads, "inference threads")->capture_default_str();
  }
  CLI11_PARSE(app, argc, argv);
  return run(app.got_subcommand("eval"), a);
}

#include "app/val_command.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "app/option_checks.h"
#include "core/build_info.h"
#include "eval/coco_dataset.h"
#include "eval/coco_eval.h"
#include "eval/yolo_dataset.h"
#include "runtime/frame_detector.h"
#include "runtime/interrupt.h"
#include "runtime/progress.h"
#include "sinks/atomic_file.h"
#include "sources/image_source.h"

namespace sd {

void set_val_defaults(ValOptions& o) {
  o.model.conf = 0.001f;
  o.model.iou = 0.7f;
  o.model.max_det = 300;
}

void add_val_options(CLI::App& cmd, ValOptions& o) {
  cmd.add_option("--data", o.data,
                 "the dataset: a COCO instances JSON (images, annotations, categories), or for a YOLO-format "
                 "dataset its names file (one class a line) or data YAML (names:)")
      ->required();
  cmd.add_option("--images", o.images,
                 "the image folder (COCO: where the file_name of each image is; YOLO: .../images/..., labels "
                 "in .../labels/...)")
      ->required();
  cmd.add_option("--format", o.format, "dataset format: auto (.json: coco, else yolo), coco, yolo")->capture_default_str();
  cmd.add_option("--save-json", o.save_json, "write the detections in COCO's results format (for pycocotools' loadRes)");
  cmd.add_option("--max-images", o.max_images, "evaluate the first N images only (-1: all)")
      ->capture_default_str()
      ->check(integer_in(-1, INT64_MAX));
  cmd.add_flag("--json", o.json, "print the metrics as one JSON object (stats in pycocotools' order)");
  cmd.add_flag("-q,--quiet", o.quiet, "no progress line on stderr");
}

namespace {

using Ms = std::chrono::duration<double, std::milli>;

struct Timing {
  double decode_ms = 0, detect_ms = 0;
  int64_t images = 0;
};

// The detections of every image in COCO's results form, category ids the dataset's. Boxes are the
// floats the detector gives, widened to double: what --save-json writes (nlohmann prints doubles so
// that they read back the same) is exactly what the metric counted.
Status detect_all(const ValOptions& o, FrameDetector& detector, const eval::ClassMapping& mapping, eval::Dataset& ds,
                  std::vector<eval::CocoResult>& results, std::unordered_map<int64_t, std::pair<int, int>>& sizes,
                  Timing& timing) {
  std::vector<std::string> files;
  for (const auto& image : ds.images) files.push_back(image.path);
  SD_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, ImageSource::open(o.images, files, SourceOptions{}));
  ProgressLine progress(!o.quiet);
  Frame frame;
  for (size_t i = 0; i < ds.images.size(); ++i) {
    if (interrupt_requested()) return fail(ErrorCode::kInterrupted, "interrupted");
    const auto t0 = Clock::now();
    auto more = source->read(frame);
    if (!more) return fail(ErrorCode::kSource, more.error().message);
    if (!*more) return fail(ErrorCode::kInternal, "image source ended early");
    const auto t1 = Clock::now();
    SD_ASSIGN_OR_RETURN(Detections dets, detector.detect(frame.image));
    const auto t2 = Clock::now();
    timing.decode_ms += Ms(t1 - t0).count();
    timing.detect_ms += Ms(t2 - t1).count();
    ++timing.images;
    const int64_t id = ds.images[i].id;
    sizes[id] = {frame.image.cols, frame.image.rows};
    for (const Detection& d : dets) {
      if (d.class_id < 0 || static_cast<size_t>(d.class_id) >= mapping.category_of_class.size()) continue;
      const int64_t category = mapping.category_of_class[static_cast<size_t>(d.class_id)];
      if (category < 0) continue;
      const double x1 = d.x1, y1 = d.y1, x2 = d.x2, y2 = d.y2;
      results.push_back({id, category, {x1, y1, x2 - x1, y2 - y1}, static_cast<double>(d.score)});
    }
    progress.update(static_cast<int64_t>(i + 1), static_cast<int64_t>(ds.images.size()));
  }
  progress.finish();
  return ok();
}

Status save_results(const std::string& path, const std::vector<eval::CocoResult>& results) {
  SD_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path, "detections"));
  {
    // One result a line, written as it goes (COCO val's 5,000 images give over a million).
    std::ofstream f(file.write_path(), std::ios::binary | std::ios::trunc);
    f << "[";
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      const nlohmann::json one = {
          {"image_id", r.image_id}, {"category_id", r.category_id}, {"bbox", {r.box.x, r.box.y, r.box.w, r.box.h}}, {"score", r.score}};
      f << (i ? ",\n" : "\n") << one.dump();
    }
    f << "\n]\n";
    f.flush();
    if (!f) return fail(ErrorCode::kOutput, "failed writing " + path);
  }
  return file.commit();
}

// A float option as the user wrote it (0.001, not 0.0010000000474974513).
double as_given(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return std::strtod(buf, nullptr);
}

std::string fixed3(double v) {
  if (v < 0) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

Status run_val(const ValOptions& o) {
  std::string format = o.format;
  if (format == "auto") format = o.data.size() >= 5 && o.data.substr(o.data.size() - 5) == ".json" ? "coco" : "yolo";
  if (format != "coco" && format != "yolo") return fail(ErrorCode::kUsage, "unknown --format '" + o.format + "' (auto|coco|yolo)");
  SD_ASSIGN_OR_RETURN(eval::Dataset ds, format == "coco" ? eval::read_coco_dataset(o.data, o.images)
                                                        : eval::read_yolo_dataset(o.data, o.images));
  if (o.max_images >= 0 && static_cast<size_t>(o.max_images) < ds.images.size()) ds.images.resize(static_cast<size_t>(o.max_images));
  if (ds.images.empty()) return fail(ErrorCode::kSource, o.data + ": no images to evaluate");

  SD_ASSIGN_OR_RETURN(std::unique_ptr<FrameDetector> detector, FrameDetector::load(o.model, false, false));
  SD_ASSIGN_OR_RETURN(eval::ClassMapping mapping, eval::map_model_classes(detector->class_names(), ds.categories));
  if (!o.save_json.empty()) SD_TRY(AtomicFile::create(o.save_json, "detections"));  // an unwritable path fails first

  std::vector<eval::CocoResult> results;
  std::unordered_map<int64_t, std::pair<int, int>> sizes;
  Timing timing;
  SD_TRY(detect_all(o, *detector, mapping, ds, results, sizes, timing));
  if (format == "yolo") eval::denormalize_truth(ds.truth, sizes);

  std::vector<int64_t> image_ids, category_ids;
  for (const auto& image : ds.images) image_ids.push_back(image.id);
  for (const auto& c : ds.categories) category_ids.push_back(c.id);
  const eval::CocoMetrics metrics = eval::evaluate_coco(image_ids, category_ids, ds.truth, results);
  std::unordered_map<int64_t, int64_t> instances;  // counted (not crowd) truth per category, on the evaluated images
  std::unordered_map<int64_t, bool> evaluated;
  for (int64_t id : image_ids) evaluated[id] = true;
  for (const auto& t : ds.truth)
    if (!t.crowd && evaluated.count(t.image_id)) ++instances[t.category_id];
  if (!o.save_json.empty()) SD_TRY(save_results(o.save_json, results));

  const double n = static_cast<double>(timing.images);
  const cv::Size in = detector->input_size();
  const std::string input = std::to_string(in.width) + "x" + std::to_string(in.height);
  if (o.json) {
    nlohmann::json j;
    j["model"] = o.model.model;
    j["data"] = o.data;
    j["format"] = format;
    j["commit"] = build_commit();
    j["images"] = timing.images;
    j["detections"] = results.size();
    j["input_size"] = input;
    j["conf"] = as_given(o.model.conf);
    j["iou"] = as_given(o.model.iou);
    j["max_det"] = o.model.max_det;
    j["class_mapping"] = mapping.by_name ? "name" : "order";
    j["stats"] = metrics.stats;
    for (int i = 0; i < eval::kCocoStats; ++i) j["metrics"][eval::kCocoStatNames[static_cast<size_t>(i)]] = metrics.stats[static_cast<size_t>(i)];
    j["per_class"] = nlohmann::json::array();
    for (size_t k = 0; k < ds.categories.size(); ++k)
      j["per_class"].push_back({{"category_id", ds.categories[k].id},
                                {"name", ds.categories[k].name},
                                {"instances", instances[ds.categories[k].id]},
                                {"ap", metrics.category_ap[k]},
                                {"ap50", metrics.category_ap50[k]}});
    j["ms_per_image"] = {{"decode", timing.decode_ms / n}, {"detect", timing.detect_ms / n}};
    std::printf("%s\n", j.dump().c_str());
    return ok();
  }
  std::printf("%s", eval::format_coco_summary(metrics).c_str());
  std::printf("\n%-20s %6s %9s %7s %7s\n", "class", "id", "instances", "AP50", "AP");
  for (size_t k = 0; k < ds.categories.size(); ++k)
    std::printf("%-20s %6lld %9lld %7s %7s\n", ds.categories[k].name.c_str(), static_cast<long long>(ds.categories[k].id),
                static_cast<long long>(instances[ds.categories[k].id]), fixed3(metrics.category_ap50[k]).c_str(),
                fixed3(metrics.category_ap[k]).c_str());
  std::printf("\n%lld images, %zu detections (conf >= %g, NMS IoU %g, at most %d per image), input %s\n",
              static_cast<long long>(timing.images), results.size(), o.model.conf, o.model.iou, o.model.max_det, input.c_str());
  std::printf("classes mapped to the dataset's categories by %s\n", mapping.by_name ? "name" : "order (the names differ)");
  std::printf("speed: %.1f ms decode, %.1f ms detect (preprocess, inference, NMS) per image\n", timing.decode_ms / n,
              timing.detect_ms / n);
  return ok();
}

}  // namespace sd

#include "synthetic/clip_writer.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include "synthetic/prng.h"

namespace sd::synth {
namespace {

nlohmann::json detections_json(const std::vector<TruthBox>& truth) {
  nlohmann::json dets = nlohmann::json::array();
  for (const TruthBox& t : truth) {
    // Two decimals are plenty for a visible fraction and keep the lines short.
    const double visible = static_cast<double>(static_cast<int>(t.visible_fraction * 100.f + 0.5f)) / 100.0;
    dets.push_back({{"box", {t.box.x1, t.box.y1, t.box.x2, t.box.y2}},
                    {"class_id", t.box.class_id},
                    {"object_id", t.object_id},
                    {"class_name", class_names()[static_cast<size_t>(t.box.class_id)]},
                    {"confidence", 1.0},
                    {"ignore", t.ignore},
                    {"visible", visible}});
  }
  return dets;
}

Status check_options(const SceneOptions& o) {
  if (o.width < 16 || o.height < 16 || o.width > 8192 || o.height > 8192)
    return fail(ErrorCode::kUsage, "synthetic clip size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                                       " is outside 16..8192");
  if (o.frames < 1) return fail(ErrorCode::kUsage, "synthetic clip needs at least one frame");
  if (!(o.fps > 0)) return fail(ErrorCode::kUsage, "synthetic clip fps must be positive");
  if (o.num_objects < 0 || o.num_objects > 1000)
    return fail(ErrorCode::kUsage, "synthetic clip object count " + std::to_string(o.num_objects) + " is outside 0..1000");
  if (o.keep_every < 1) return fail(ErrorCode::kUsage, "synthetic clip: keep every n-th frame needs n >= 1");
  if (o.stop_percent < 0 || o.stop_percent > 100)
    return fail(ErrorCode::kUsage, "synthetic clip stop percentage " + std::to_string(o.stop_percent) + " is outside 0..100");
  return ok();
}

Result<int> fourcc_for(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".mp4") return cv::VideoWriter::fourcc('m', 'p', '4', 'v');
  if (ext == ".avi") return cv::VideoWriter::fourcc('M', 'J', 'P', 'G');
  return fail(ErrorCode::kUsage, "synthetic clip " + path + ": extension must be .mp4 (mp4v) or .avi (MJPG)");
}

}  // namespace

std::string truth_jsonl_line(const std::string& source, int frame, double timestamp_ms,
                             const std::vector<TruthBox>& truth) {
  nlohmann::json line = {{"source", source},
                         {"frame", frame},
                         {"timestamp_ms", timestamp_ms},
                         {"detections", detections_json(truth)}};
  return line.dump();
}

Status write_synthetic_clip(const SceneOptions& options, const std::string& video_path,
                            const std::string& truth_jsonl_path) {
  SD_TRY(check_options(options));
  SD_ASSIGN_OR_RETURN(const int fourcc, fourcc_for(video_path));

  std::ofstream truth_file(truth_jsonl_path, std::ios::binary | std::ios::trunc);
  if (!truth_file) return fail(ErrorCode::kOutput, "cannot open ground-truth file " + truth_jsonl_path + " for writing");
  // Frames dropped: the video runs at fps / keep_every, so a reader's timestamps stay the true ones.
  const double video_fps = options.fps / options.keep_every;
  cv::VideoWriter writer(video_path, cv::CAP_FFMPEG, fourcc, video_fps, cv::Size(options.width, options.height));
  if (!writer.isOpened())
    return fail(ErrorCode::kOutput, "cannot open video " + video_path + " for writing (OpenCV FFmpeg VideoWriter)");

  const SyntheticScene scene(options);
  cv::Mat frame;
  std::vector<TruthBox> truth;
  for (int i = 0, written = 0; i < options.frames; i += options.keep_every, ++written) {
    scene.render(i, frame, truth);
    writer.write(frame);
    truth_file << truth_jsonl_line(video_path, written, 1000.0 * i / options.fps, truth) << '\n';
  }
  writer.release();
  truth_file.flush();
  if (!truth_file) return fail(ErrorCode::kOutput, "failed writing ground-truth file " + truth_jsonl_path);
  std::error_code ec;
  if (std::filesystem::file_size(video_path, ec) == 0 || ec)
    return fail(ErrorCode::kOutput, "video " + video_path + " is empty after writing");
  return ok();
}

Status write_training_frames(const FrameDumpOptions& options, const std::string& out_dir) {
  if (options.count < 1) return fail(ErrorCode::kUsage, "training frame count must be positive");
  if (options.sizes.empty()) return fail(ErrorCode::kUsage, "training frames need at least one frame size");
  if (options.min_objects < 0 || options.max_objects < options.min_objects)
    return fail(ErrorCode::kUsage, "training frames: bad object count range");
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(out_dir) / "images", ec);
  if (ec) return fail(ErrorCode::kOutput, "cannot create " + out_dir + "/images: " + ec.message());
  const std::string labels_path = (fs::path(out_dir) / "labels.jsonl").string();
  std::ofstream labels(labels_path, std::ios::binary | std::ios::trunc);
  if (!labels) return fail(ErrorCode::kOutput, "cannot open " + labels_path + " for writing");

  nlohmann::json coco = {{"images", nlohmann::json::array()}, {"annotations", nlohmann::json::array()}, {"categories", nlohmann::json::array()}};
  for (int c = 0; c < kNumClasses; ++c) coco["categories"].push_back({{"id", 1 + 2 * c}, {"name", class_names()[static_cast<size_t>(c)]}});
  if (options.yolo) {
    fs::create_directories(fs::path(out_dir) / "labels", ec);
    if (ec) return fail(ErrorCode::kOutput, "cannot create " + out_dir + "/labels: " + ec.message());
    std::ofstream yaml(fs::path(out_dir) / "data.yaml", std::ios::binary | std::ios::trunc);
    yaml << "names:\n";
    for (int c = 0; c < kNumClasses; ++c) yaml << "  " << c << ": " << class_names()[static_cast<size_t>(c)] << "\n";
    if (!yaml) return fail(ErrorCode::kOutput, "cannot write " + out_dir + "/data.yaml");
  }
  cv::Mat frame;
  std::vector<TruthBox> truth;
  for (int k = 0; k < options.count; ++k) {
    SplitMix64 rng(hash64(options.seed, 0xF4A3E, static_cast<uint64_t>(k)));
    const cv::Size size = options.sizes[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(options.sizes.size()) - 1))];
    SceneOptions scene_options;
    scene_options.width = size.width;
    scene_options.height = size.height;
    scene_options.seed = rng.next();
    scene_options.num_objects = static_cast<int>(rng.uniform(options.min_objects, options.max_objects));
    SD_TRY(check_options(scene_options));
    const int index = static_cast<int>(rng.uniform(0, std::max(1, options.max_frame_index) - 1));
    SyntheticScene(scene_options).render(index, frame, truth);

    char name[32];
    std::snprintf(name, sizeof(name), "images/%06d.png", k);
    const std::string image_path = (fs::path(out_dir) / name).string();
    if (!cv::imwrite(image_path, frame)) return fail(ErrorCode::kOutput, "cannot write " + image_path);
    nlohmann::json line = {{"image", name},
                           {"width", size.width},
                           {"height", size.height},
                           {"detections", detections_json(truth)}};
    labels << line.dump() << '\n';
    if (options.coco) {
      coco["images"].push_back({{"id", k + 1}, {"file_name", std::string(name).substr(7)}, {"width", size.width}, {"height", size.height}});
      for (const TruthBox& t : truth) {
        const float w = t.box.x2 - t.box.x1, h = t.box.y2 - t.box.y1;
        coco["annotations"].push_back({{"id", coco["annotations"].size() + 1},
                                       {"image_id", k + 1},
                                       {"category_id", 1 + 2 * t.box.class_id},
                                       {"bbox", {t.box.x1, t.box.y1, w, h}},
                                       {"area", w * h},
                                       {"iscrowd", t.ignore ? 1 : 0}});
      }
    }
    if (options.yolo) {
      char label_name[32];
      std::snprintf(label_name, sizeof(label_name), "labels/%06d.txt", k);
      std::ofstream label(fs::path(out_dir) / label_name, std::ios::binary | std::ios::trunc);
      for (const TruthBox& t : truth) {
        if (t.ignore) continue;
        const double W = size.width, H = size.height;
        label << t.box.class_id << ' ' << (t.box.x1 + t.box.x2) / 2 / W << ' ' << (t.box.y1 + t.box.y2) / 2 / H << ' '
              << (t.box.x2 - t.box.x1) / W << ' ' << (t.box.y2 - t.box.y1) / H << '\n';
      }
      if (!label) return fail(ErrorCode::kOutput, "cannot write " + out_dir + "/" + label_name);
    }
  }
  if (options.coco) {
    const std::string coco_path = (fs::path(out_dir) / "instances.json").string();
    std::ofstream out(coco_path, std::ios::binary | std::ios::trunc);
    out << coco.dump() << '\n';
    if (!out) return fail(ErrorCode::kOutput, "cannot write " + coco_path);
  }
  labels.flush();
  if (!labels) return fail(ErrorCode::kOutput, "failed writing " + labels_path);
  return ok();
}

}  // namespace sd::synth

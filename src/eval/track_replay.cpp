#include "eval/track_replay.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>
#include <opencv2/videoio.hpp>

#include "synthetic/prng.h"

namespace sd::eval {

std::vector<FrameRecord> jitter_truth(const std::vector<FrameRecord>& truth, const JitterOptions& options) {
  std::vector<FrameRecord> out;
  out.reserve(truth.size());
  synth::SplitMix64 rng(synth::hash64(options.seed, 0x717E4));
  constexpr int64_t kSteps = 1 << 20;  // uniform in [-1, 1] in steps of 2^-20
  auto offset = [&](float side) {
    const double u = static_cast<double>(rng.uniform(-kSteps, kSteps)) / kSteps;
    return static_cast<float>(u * options.jitter * side);
  };
  for (const FrameRecord& r : truth) {
    FrameRecord f;
    f.frame = r.frame;
    f.timestamp_ms = r.timestamp_ms;
    for (const GroundTruthBox& g : r.boxes) {
      GroundTruthBox d;
      d.box = g.box;
      const float w = g.box.x2 - g.box.x1, h = g.box.y2 - g.box.y1;
      d.box.x1 += offset(w);
      d.box.y1 += offset(h);
      d.box.x2 += offset(w);
      d.box.y2 += offset(h);
      if (d.box.x2 <= d.box.x1 + 1) d.box.x2 = d.box.x1 + 1;
      if (d.box.y2 <= d.box.y1 + 1) d.box.y2 = d.box.y1 + 1;
      d.box.score = g.ignore ? options.hidden_score : options.visible_score;
      f.boxes.push_back(d);
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<FrameRecord> run_tracker(std::vector<FrameRecord> frames, const track::TrackerOptions& options,
                                     double frame_interval_ms, const std::vector<std::vector<track::Appearance>>& looks,
                                     std::pair<int, int> picture) {
  std::vector<size_t> order(frames.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return frames[a].timestamp_ms != frames[b].timestamp_ms ? frames[a].timestamp_ms < frames[b].timestamp_ms
                                                            : frames[a].frame < frames[b].frame;
  });
  {
    std::vector<FrameRecord> sorted;
    sorted.reserve(frames.size());
    for (size_t i : order) sorted.push_back(std::move(frames[i]));
    frames = std::move(sorted);
  }
  if (frame_interval_ms <= 0) {
    std::vector<double> gaps;
    for (size_t i = 1; i < frames.size(); ++i) gaps.push_back(frames[i].timestamp_ms - frames[i - 1].timestamp_ms);
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
      frame_interval_ms = gaps[gaps.size() / 2];
    }
  }
  track::ByteTracker tracker(options, frame_interval_ms);
  tracker.set_picture_size(picture.first, picture.second);
  std::vector<Detection> dets;
  for (size_t n = 0; n < frames.size(); ++n) {
    FrameRecord& f = frames[n];
    dets.clear();
    for (const GroundTruthBox& g : f.boxes) dets.push_back(g.box);
    std::span<const track::Appearance> frame_looks;
    if (order[n] < looks.size()) frame_looks = looks[order[n]];
    const std::vector<int64_t> ids = tracker.update(dets, f.timestamp_ms, frame_looks);
    for (size_t k = 0; k < f.boxes.size(); ++k) f.boxes[k].track_id = ids[k];
  }
  return frames;
}

std::pair<int, int> video_size(const std::string& video_path) {
  cv::VideoCapture video(video_path, cv::CAP_FFMPEG);
  if (!video.isOpened()) return {0, 0};
  return {static_cast<int>(video.get(cv::CAP_PROP_FRAME_WIDTH)), static_cast<int>(video.get(cv::CAP_PROP_FRAME_HEIGHT))};
}

Result<std::vector<std::vector<track::Appearance>>> describe_boxes(const std::vector<FrameRecord>& frames,
                                                                   const std::string& video_path) {
  cv::VideoCapture video(video_path, cv::CAP_FFMPEG);
  if (!video.isOpened()) return fail(ErrorCode::kSource, "cannot open video " + video_path);
  std::vector<size_t> order(frames.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return frames[a].frame < frames[b].frame; });
  std::vector<std::vector<track::Appearance>> looks(frames.size());
  cv::Mat picture;
  int64_t at = -1;  // the index of the frame in `picture`
  for (size_t i : order) {
    const FrameRecord& f = frames[i];
    while (at < f.frame) {
      if (!video.read(picture))
        return fail(ErrorCode::kSource, video_path + " ends before frame " + std::to_string(f.frame) + " of the detections");
      ++at;
    }
    const track::PixelView view{track::PixelView::Format::kBgr, picture.data, picture.cols, picture.rows, picture.step[0]};
    for (const GroundTruthBox& g : f.boxes) looks[i].push_back(track::describe_box(view, g.box));
  }
  return looks;
}

Status write_frames_jsonl(const std::vector<FrameRecord>& frames, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return fail(ErrorCode::kOutput, "cannot open " + path + " for writing");
  for (const FrameRecord& f : frames) {
    nlohmann::json dets = nlohmann::json::array();
    for (const GroundTruthBox& g : f.boxes) {
      nlohmann::json d = {{"box", {g.box.x1, g.box.y1, g.box.x2, g.box.y2}},
                          {"class_id", g.box.class_id},
                          {"confidence", g.box.score}};
      if (g.track_id >= 0) d["track_id"] = g.track_id;
      dets.push_back(std::move(d));
    }
    const nlohmann::json line = {{"frame", f.frame}, {"timestamp_ms", f.timestamp_ms}, {"detections", dets}};
    out << line.dump() << '\n';
  }
  out.flush();
  if (!out) return fail(ErrorCode::kOutput, "failed writing " + path);
  return ok();
}

}  // namespace sd::eval

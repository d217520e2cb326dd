#include "eval/track_replay.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

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
                                     double frame_interval_ms) {
  std::stable_sort(frames.begin(), frames.end(), [](const FrameRecord& a, const FrameRecord& b) {
    return a.timestamp_ms != b.timestamp_ms ? a.timestamp_ms < b.timestamp_ms : a.frame < b.frame;
  });
  if (frame_interval_ms <= 0) {
    std::vector<double> gaps;
    for (size_t i = 1; i < frames.size(); ++i) gaps.push_back(frames[i].timestamp_ms - frames[i - 1].timestamp_ms);
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
      frame_interval_ms = gaps[gaps.size() / 2];
    }
  }
  track::ByteTracker tracker(options, frame_interval_ms);
  std::vector<Detection> dets;
  for (FrameRecord& f : frames) {
    dets.clear();
    for (const GroundTruthBox& g : f.boxes) dets.push_back(g.box);
    const std::vector<int64_t> ids = tracker.update(dets, f.timestamp_ms);
    for (size_t k = 0; k < f.boxes.size(); ++k) f.boxes[k].track_id = ids[k];
  }
  return frames;
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

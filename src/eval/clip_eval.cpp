#include "eval/clip_eval.h"

#include <fstream>
#include <map>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

namespace sd::eval {
namespace {

Result<FrameRecord> parse_line(const std::string& text, const std::string& where) {
  nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded() || !line.is_object()) return fail(ErrorCode::kSource, where + ": not a JSON object");
  FrameRecord record;
  auto frame = line.find("frame");
  if (frame == line.end() || !frame->is_number_integer())
    return fail(ErrorCode::kSource, where + ": missing integer \"frame\"");
  record.frame = frame->get<int64_t>();
  auto timestamp = line.find("timestamp_ms");
  if (timestamp != line.end() && timestamp->is_number()) record.timestamp_ms = timestamp->get<double>();
  auto dets = line.find("detections");
  if (dets == line.end() || !dets->is_array()) return fail(ErrorCode::kSource, where + ": missing array \"detections\"");
  for (const auto& d : *dets) {
    if (!d.is_object()) return fail(ErrorCode::kSource, where + ": a detection must be a JSON object");
    auto box = d.find("box");
    auto cls = d.find("class_id");
    if (box == d.end() || !box->is_array() || box->size() != 4 || cls == d.end() ||
        !cls->is_number_integer())
      return fail(ErrorCode::kSource, where + ": a detection needs \"box\" [x1, y1, x2, y2] and integer \"class_id\"");
    GroundTruthBox g;
    for (const auto& v : *box)
      if (!v.is_number()) return fail(ErrorCode::kSource, where + ": box coordinates must be numbers");
    g.box.x1 = (*box)[0].get<float>();
    g.box.y1 = (*box)[1].get<float>();
    g.box.x2 = (*box)[2].get<float>();
    g.box.y2 = (*box)[3].get<float>();
    g.box.class_id = cls->get<int>();
    auto confidence = d.find("confidence");
    g.box.score = (confidence != d.end() && confidence->is_number()) ? confidence->get<float>() : 1.f;
    auto ignore = d.find("ignore");
    g.ignore = ignore != d.end() && ignore->is_boolean() && ignore->get<bool>();
    for (auto [key, id] : {std::pair{"object_id", &g.object_id}, std::pair{"track_id", &g.track_id}}) {
      auto value = d.find(key);
      if (value == d.end()) continue;
      if (!value->is_number_integer())
        return fail(ErrorCode::kSource, where + ": \"" + key + "\" must be an integer");
      *id = value->get<int64_t>();
    }
    record.boxes.push_back(g);
  }
  return record;
}

}  // namespace

Result<std::vector<FrameRecord>> read_frames_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kSource, "cannot open " + path);
  std::vector<FrameRecord> records;
  std::unordered_set<int64_t> seen;
  std::string text;
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    SD_ASSIGN_OR_RETURN(FrameRecord record, parse_line(text, path + ":" + std::to_string(line_no)));
    if (!seen.insert(record.frame).second)
      return fail(ErrorCode::kSource, path + ":" + std::to_string(line_no) + ": frame " +
                                          std::to_string(record.frame) + " appears twice");
    records.push_back(std::move(record));
  }
  return records;
}

ClipEvaluation evaluate_frames(const std::vector<FrameRecord>& truth, const std::vector<FrameRecord>& detections,
                               const MatchOptions& options) {
  std::map<int64_t, const FrameRecord*> by_frame;
  for (const FrameRecord& r : detections) by_frame[r.frame] = &r;

  ClipEvaluation result;
  auto grow = [&](int class_id) {
    if (class_id >= 0 && static_cast<size_t>(class_id) >= result.per_class.size())
      result.per_class.resize(static_cast<size_t>(class_id) + 1);
  };
  std::vector<Detection> dets, class_dets;
  std::vector<GroundTruthBox> class_truth;
  std::unordered_set<int64_t> truth_frames;
  for (const FrameRecord& t : truth) {
    ++result.frames;
    truth_frames.insert(t.frame);
    dets.clear();
    auto it = by_frame.find(t.frame);
    if (it == by_frame.end()) {
      ++result.frames_missing;
    } else {
      for (const GroundTruthBox& d : it->second->boxes) dets.push_back(d.box);
    }
    result.total += match_frame(dets, t.boxes, options);

    // Per class: with class-aware matching, classes do not interact, so filtering is exact.
    for (const GroundTruthBox& g : t.boxes) grow(g.box.class_id);
    for (const Detection& d : dets) grow(d.class_id);
    for (size_t c = 0; c < result.per_class.size(); ++c) {
      class_dets.clear();
      class_truth.clear();
      for (const Detection& d : dets)
        if (d.class_id == static_cast<int>(c)) class_dets.push_back(d);
      for (const GroundTruthBox& g : t.boxes)
        if (g.box.class_id == static_cast<int>(c)) class_truth.push_back(g);
      result.per_class[c] += match_frame(class_dets, class_truth, options);
    }
  }
  for (const FrameRecord& d : detections) {
    if (truth_frames.count(d.frame)) continue;
    ++result.frames_unexpected;
    result.total.false_positives += static_cast<int64_t>(d.boxes.size());
    for (const GroundTruthBox& g : d.boxes) {
      grow(g.box.class_id);
      if (g.box.class_id >= 0) ++result.per_class[static_cast<size_t>(g.box.class_id)].false_positives;
    }
  }
  return result;
}

Result<ClipEvaluation> evaluate_clip(const std::string& truth_jsonl, const std::string& detections_jsonl,
                                     const MatchOptions& options) {
  SD_ASSIGN_OR_RETURN(auto truth, read_frames_jsonl(truth_jsonl));
  SD_ASSIGN_OR_RETURN(auto detections, read_frames_jsonl(detections_jsonl));
  return evaluate_frames(truth, detections, options);
}

}  // namespace sd::eval

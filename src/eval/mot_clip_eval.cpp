#include "eval/mot_clip_eval.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "track/assignment.h"

namespace sd::eval {
namespace {

struct FramePair {
  const FrameRecord* truth = nullptr;
  const FrameRecord* tracked = nullptr;
};

// Whether each hypothesis is paired with an ignored truth box in the frame's one-to-one pairing of
// hypotheses with all truth boxes (most pairs first, then the least total 1 - IoU).
std::vector<char> on_ignored_truth(const std::vector<GroundTruthBox>& truth, const std::vector<MotObject>& hyps,
                                   const MotClipOptions& options) {
  std::vector<char> result(hyps.size(), 0);
  const bool any_ignored = std::any_of(truth.begin(), truth.end(), [](const GroundTruthBox& g) { return g.ignore; });
  if (!any_ignored || hyps.empty()) return result;
  const size_t rows = truth.size(), cols = hyps.size();
  const double big = 1.0 + static_cast<double>(std::min(rows, cols));
  std::vector<double> weights(rows * cols, 0.0);
  for (size_t t = 0; t < rows; ++t)
    for (size_t h = 0; h < cols; ++h) {
      if (options.class_aware && truth[t].box.class_id != hyps[h].box.class_id) continue;
      const double v = iou(truth[t].box, hyps[h].box);
      if (v >= options.iou_threshold) weights[t * cols + h] = big - (1.0 - v);
    }
  const track::Assignment a = track::max_weight_matching(weights, static_cast<int>(rows), static_cast<int>(cols));
  for (const auto& [t, h] : a.matches)
    if (truth[static_cast<size_t>(t)].ignore) result[static_cast<size_t>(h)] = 1;
  return result;
}

std::string where(int64_t frame) { return "frame " + std::to_string(frame); }

}  // namespace

Result<MotClipEvaluation> evaluate_tracking(const std::vector<FrameRecord>& truth,
                                            const std::vector<FrameRecord>& tracked, const MotClipOptions& options) {
  std::map<int64_t, FramePair> frames;  // in frame order
  for (const FrameRecord& r : truth) frames[r.frame].truth = &r;
  for (const FrameRecord& r : tracked) frames[r.frame].tracked = &r;

  MotClipEvaluation result;
  MotAccumulator acc(options.iou_threshold, options.class_aware);
  const std::vector<GroundTruthBox> none;
  std::vector<MotObject> truth_objects, hyps, kept_hyps;
  std::set<int64_t> ids;
  std::vector<int64_t> frame_numbers;  // the accumulator's frame order -> the files' frame index
  for (const auto& [frame, pair] : frames) {
    frame_numbers.push_back(frame);
    if (!pair.truth) ++result.frames_unexpected;
    if (!pair.tracked) ++result.frames_missing;
    const std::vector<GroundTruthBox>& truth_boxes = pair.truth ? pair.truth->boxes : none;
    const std::vector<GroundTruthBox>& tracked_boxes = pair.tracked ? pair.tracked->boxes : none;

    truth_objects.clear();
    ids.clear();
    for (const GroundTruthBox& g : truth_boxes) {
      if (g.ignore) {
        ++result.ignored_truth;
        continue;
      }
      if (g.object_id < 0)
        return fail(ErrorCode::kSource, "ground truth, " + where(frame) +
                                            ": a box without \"object_id\" (written before clips had identities?)");
      if (!ids.insert(g.object_id).second)
        return fail(ErrorCode::kSource, "ground truth, " + where(frame) + ": object_id " +
                                            std::to_string(g.object_id) + " appears twice");
      truth_objects.push_back({g.object_id, g.box});
    }

    hyps.clear();
    ids.clear();
    for (const GroundTruthBox& d : tracked_boxes) {
      if (d.track_id < 0) {
        ++result.untracked_detections;
        continue;
      }
      if (!ids.insert(d.track_id).second)
        return fail(ErrorCode::kSource, "tracks, " + where(frame) + ": track_id " + std::to_string(d.track_id) +
                                            " appears twice");
      hyps.push_back({d.track_id, d.box});
    }
    const std::vector<char> ignored = on_ignored_truth(truth_boxes, hyps, options);
    kept_hyps.clear();
    for (size_t h = 0; h < hyps.size(); ++h) {
      if (ignored[h]) ++result.ignored_hypotheses;
      else kept_hyps.push_back(hyps[h]);
    }
    acc.add_frame(truth_objects, kept_hyps);
  }
  result.metrics = acc.summary();
  for (MotSwitch& s : result.metrics.switches) s.frame = frame_numbers[static_cast<size_t>(s.frame)];
  return result;
}

Result<MotClipEvaluation> evaluate_tracking_clip(const std::string& truth_jsonl, const std::string& tracked_jsonl,
                                                 const MotClipOptions& options) {
  SD_ASSIGN_OR_RETURN(auto truth, read_frames_jsonl(truth_jsonl));
  SD_ASSIGN_OR_RETURN(auto tracked, read_frames_jsonl(tracked_jsonl));
  auto result = evaluate_tracking(truth, tracked, options);
  if (!result) return fail(result.error().code, truth_jsonl + " against " + tracked_jsonl + ": " + result.error().message);
  return result;
}

std::string mot_json(const MotClipEvaluation& e, const MotClipOptions& options) {
  const MotMetrics& m = e.metrics;
  const double per_20 = m.truth_tracks > 0 ? 20.0 * static_cast<double>(m.id_switches) / static_cast<double>(m.truth_tracks) : 0.0;
  nlohmann::json j = {{"iou_threshold", options.iou_threshold},
                      {"class_aware", options.class_aware},
                      {"frames", m.frames},
                      {"frames_missing", e.frames_missing},
                      {"frames_unexpected", e.frames_unexpected},
                      {"truth_boxes", m.truth_boxes},
                      {"hypothesis_boxes", m.hypothesis_boxes},
                      {"ignored_truth", e.ignored_truth},
                      {"ignored_hypotheses", e.ignored_hypotheses},
                      {"untracked_detections", e.untracked_detections},
                      {"mota", m.mota},
                      {"motp", m.motp},
                      {"idf1", m.idf1},
                      {"hota", m.hota.hota},
                      {"deta", m.hota.deta},
                      {"assa", m.hota.assa},
                      {"loca", m.hota.loca},
                      {"idp", m.idp},
                      {"idr", m.idr},
                      {"idtp", m.idtp},
                      {"idfp", m.idfp},
                      {"idfn", m.idfn},
                      {"matches", m.matches},
                      {"misses", m.misses},
                      {"false_positives", m.false_positives},
                      {"id_switches", m.id_switches},
                      {"ids_per_20_tracks", per_20},
                      {"fragmentations", m.fragmentations},
                      {"truth_tracks", m.truth_tracks},
                      {"mostly_tracked", m.mostly_tracked},
                      {"partially_tracked", m.partially_tracked},
                      {"mostly_lost", m.mostly_lost}};
  return j.dump();
}

std::string mot_switches_jsonl(const MotClipEvaluation& e) {
  std::string out;
  for (const MotSwitch& s : e.metrics.switches)
    out += nlohmann::json{{"frame", s.frame}, {"object_id", s.truth_id}, {"from_track", s.from}, {"to_track", s.to}}
               .dump() +
           "\n";
  return out;
}

}  // namespace sd::eval

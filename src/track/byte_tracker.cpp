#include "track/byte_tracker.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "track/assignment.h"
#include "track/box_kalman.h"

namespace sd::track {

namespace {

constexpr double kSecondRoundLimit = 0.5;       // low-score round: IoU > 0.5
constexpr double kUnconfirmedLimit = 0.7;       // tracks born last frame: IoU * score > 0.3
constexpr double kDuplicateLimit = 0.15;        // a live and a lost track this close are one object
constexpr double kRecoveryLimit = 0.7;          // recovery round: IoU with the last box seen > 0.3
constexpr double kGateChi2 = 5.991;             // gated recovery: chi-square, 2 dof, 95%
constexpr double kBlindFrames = 10;             // low-score boxes leave the filter alone this long
constexpr float kOccludedOverlap = 0.1f;        // a prediction overlapped this much (a share of its
                                                // area) by another track's may be partly hidden
constexpr double kRetiredGateChi2 = 40;         // a retired track's gate: its prediction has run on
                                                // for over a second, its covariance with it
constexpr double kRetiredNearChi2 = 1;          // ... and where it is as good as on its prediction
constexpr double kRetiredNearLooks = 3;         // (times reid_distance): the looks it may have there
constexpr double kNoEdge = std::numeric_limits<double>::quiet_NaN();
constexpr float kCrowdedOverlap = 0.1f;        // a box overlapping two tracks' predictions this much
                                                // is shared: it does not teach either its colours

}  // namespace

enum class TrackState { kTracked, kLost };
constexpr int kSeenBoxes = 4;  // boxes kept for a track's observed motion (OC-SORT's delta_t = 3)

struct ByteTracker::Track {
  using State = TrackState;
  int64_t id = 0;  // 0 while unconfirmed
  int class_id = 0;
  float score = 0;
  BoxState filter;
  Detection last_box;  // the last detection it took: where a hidden object was last seen
  Appearance look;     // moving average of its uncrowded confident boxes' descriptors
  State state = State::kTracked;
  double predicted_to_ms = 0;  // the time the filter's state is for
  double first_seen_ms = 0, last_seen_ms = 0;
  double last_confident_ms = 0;  // when it last took a box from the first rounds (or was born)
  float whole_w = 0, whole_h = 0;  // its box's size when last seen with no other track over it
  bool occluded = false;           // this frame: its prediction is overlapped by another track's
  // The centres of its last kSeenBoxes confident boxes and when they were seen (oldest first).
  std::array<float, kSeenBoxes> seen_x{}, seen_y{};
  std::array<double, kSeenBoxes> seen_ms{};
  int seen_count = 0;
  void remember(const Detection& d, double ms) {
    if (seen_count == kSeenBoxes) {
      std::rotate(seen_x.begin(), seen_x.begin() + 1, seen_x.end());
      std::rotate(seen_y.begin(), seen_y.begin() + 1, seen_y.end());
      std::rotate(seen_ms.begin(), seen_ms.begin() + 1, seen_ms.end());
      --seen_count;
    }
    const auto k = static_cast<size_t>(seen_count++);
    seen_x[k] = 0.5f * (d.x1 + d.x2);
    seen_y[k] = 0.5f * (d.y1 + d.y2);
    seen_ms[k] = ms;
  }
  bool matched_this_frame = false;
};
using State = TrackState;

ByteTracker::ByteTracker(TrackerOptions options, double frame_interval_ms)
    : options_(options), frame_interval_ms_(frame_interval_ms > 0 ? frame_interval_ms : 1000.0 / 30) {}
ByteTracker::~ByteTracker() = default;
ByteTracker::ByteTracker(ByteTracker&&) noexcept = default;
ByteTracker& ByteTracker::operator=(ByteTracker&&) noexcept = default;

std::vector<double> ByteTracker::iou_costs(const std::vector<size_t>& tracks, const std::vector<size_t>& dets,
                                           std::span<const Detection> detections, bool fuse_score, Where where,
                                           double limit, std::span<const Appearance> looks,
                                           std::vector<int>* crowding) const {
  // Two instances, so that the tracker without descriptors runs the loop it always ran.
  if (looks.empty() || where == Where::kLowScore) return costs_of<false>(tracks, dets, detections, fuse_score, where, limit, looks, nullptr);
  return costs_of<true>(tracks, dets, detections, fuse_score, where, limit, looks, crowding);
}

template <bool kLooks>
std::vector<double> ByteTracker::costs_of(const std::vector<size_t>& tracks, const std::vector<size_t>& dets,
                                          std::span<const Detection> detections, bool fuse_score, Where where,
                                          double limit, std::span<const Appearance> looks,
                                          std::vector<int>* crowding) const {
  std::vector<double> costs(tracks.size() * dets.size());
  if (crowding) crowding->assign(dets.size(), 0);
  for (size_t r = 0; r < tracks.size(); ++r) {
    const Track& t = tracks_[tracks[r]];
    const Detection predicted = BoxKalman::box_of(t.filter);
    for (size_t c = 0; c < dets.size(); ++c) {
      const Detection& d = detections[dets[c]];
      double& cost = costs[r * dets.size() + c];
      if (!options_.class_agnostic && d.class_id != t.class_id) {
        cost = kNoEdge;
        continue;
      }
      double overlap = iou(predicted, d);
      // Where a hidden object may be seen again: where it was predicted, or where it was last seen
      // (it stopped behind the occluder, or its prediction ran off).
      if (where == Where::kRecovery) overlap = std::max(overlap, static_cast<double>(iou(t.last_box, d)));
      // A low-score box is mostly the part of an object still seen: it lies inside the predicted
      // box however small it has become (its IoU with the whole falls with its size).
      if (where == Where::kLowScore) {
        const double ix = std::max(0.f, std::min(predicted.x2, d.x2) - std::max(predicted.x1, d.x1));
        const double iy = std::max(0.f, std::min(predicted.y2, d.y2) - std::max(predicted.y1, d.y1));
        const double area = std::max(1e-6f, (d.x2 - d.x1) * (d.y2 - d.y1));
        overlap = std::max(overlap, ix * iy / area);
      }
      cost = overlap > 0 ? 1.0 - overlap * (fuse_score ? d.score : 1.0) : kNoEdge;
      if constexpr (kLooks) {
        if (crowding && overlap > kCrowdedOverlap) ++(*crowding)[c];
        // Only for the pairs the boxes allow (few: a track overlaps one or two detections).
        // The gate stays the boxes' (the caller's limit is raised by the weight): the cue
        // reorders the pairs the boxes allow and lets none through that they do not.
        if (overlap > 0)
          cost = cost >= limit ? kNoEdge : cost + options_.appearance_weight * appearance_distance(t.look, looks[dets[c]]);
      }
    }
  }
  return costs;
}

Detection ByteTracker::whole_box(const Track& track, const Detection& det) const {
  // A confident box may be the part of an object still seen as well: the object partly behind
  // another (its prediction overlapped by another track's) and the box narrower or shorter than
  // the object was when last seen alone. Fed as it is, it shrinks the filter's box and drags its
  // centre and velocity towards the part seen; the object then comes out larger and elsewhere than
  // predicted, and is not found. The filter gets instead the whole object's box, as large as
  // predicted, put against the detection's edges on the side nearest the prediction's (the other
  // side, further from the prediction's, is the hidden one).
  const float w = det.x2 - det.x1, h = det.y2 - det.y1;
  if (!track.occluded || options_.partial_box <= 0 ||
      (w >= options_.partial_box * track.whole_w && h >= options_.partial_box * track.whole_h))
    return det;
  const Detection p = BoxKalman::box_of(track.filter);
  const float pw = p.x2 - p.x1, ph = p.y2 - p.y1;
  Detection whole = det;
  if (w < pw) {
    if (std::abs(det.x1 - p.x1) <= std::abs(det.x2 - p.x2))
      whole.x2 = det.x1 + pw;
    else
      whole.x1 = det.x2 - pw;
  }
  if (h < ph) {
    if (std::abs(det.y1 - p.y1) <= std::abs(det.y2 - p.y2))
      whole.y2 = det.y1 + ph;
    else
      whole.y1 = det.y2 - ph;
  }
  return whole;
}

void ByteTracker::take(Track& track, const Detection& det, double timestamp_ms, bool low_score, const Appearance* look) {
  // A low score is mostly an object partly hidden, whose box is the part still seen: shrinking and
  // shifting as the occluder covers it, it would bend the filter's velocity, and the prediction
  // would not be where the object comes out. Such a box keeps the track alive but leaves its
  // filter predicting the whole object's motion, for up to kBlindFrames; an object seen only at
  // low scores for longer is followed by its boxes again.
  const bool blind = low_score && timestamp_ms - track.last_confident_ms <= kBlindFrames * frame_interval_ms_;
  if (!blind) BoxKalman::update(track.filter, low_score ? det : whole_box(track, det));
  if (!low_score) {
    track.last_confident_ms = timestamp_ms;
    track.remember(det, timestamp_ms);
  }
  if (!low_score && !track.occluded) {
    track.whole_w = det.x2 - det.x1;
    track.whole_h = det.y2 - det.y1;
  }
  if (look && !low_score) blend_appearance(track.look, *look);
  track.state = State::kTracked;
  track.score = det.score;
  track.last_box = det;
  track.last_seen_ms = timestamp_ms;
  track.matched_this_frame = true;
}

std::vector<int64_t> ByteTracker::update(std::span<const Detection> detections, double timestamp_ms,
                                         std::span<const Appearance> looks) {
  std::vector<int64_t> ids(detections.size(), -1);
  if (!options_.appearance || looks.size() != detections.size()) looks = {};
  const double slack = looks_slack(looks);

  // Not seen for longer than the buffer, with or without frames meanwhile (a reconnect gap): gone,
  // or retired (kept for re-identification by its looks alone).
  retire(timestamp_ms);

  for (Track& t : tracks_) {
    if (t.state == State::kLost) t.filter.mean(7) = 0;  // a lost box keeps its size (ByteTrack)
    if (options_.motion) BoxKalman::predict(t.filter, (timestamp_ms - t.predicted_to_ms) / frame_interval_ms_);
    t.predicted_to_ms = std::max(t.predicted_to_ms, timestamp_ms);
    t.matched_this_frame = false;
  }
  // A lost track predicted out of the picture has left it: gone, so that it does not take an object
  // coming in at the same edge a moment later (the gated and re-finding rounds would let it).
  if (picture_width_ > 0 && picture_height_ > 0)
    std::erase_if(tracks_, [&](const Track& t) {
      const double cx = t.filter.mean(0), cy = t.filter.mean(1);
      return t.state == State::kLost && (cx < 0 || cy < 0 || cx > picture_width_ || cy > picture_height_);
    });
  if (options_.partial_box > 0 && options_.motion) mark_occluded();

  std::vector<size_t> high, low;
  for (size_t i = 0; i < detections.size(); ++i) {
    const float s = detections[i].score;
    if (s >= options_.track_thresh)
      high.push_back(i);
    else if (s >= options_.low_thresh)
      low.push_back(i);
  }
  std::vector<size_t> pool, unconfirmed;
  for (size_t k = 0; k < tracks_.size(); ++k) (tracks_[k].id > 0 ? pool : unconfirmed).push_back(k);

  // Round 1: confirmed tracks (live and lost) against the confident detections.
  std::vector<int> crowding;
  Assignment first = min_cost_assignment(
      iou_costs(pool, high, detections, true, Where::kPredicted, options_.match_thresh, looks, looks.empty() ? nullptr : &crowding),
      static_cast<int>(pool.size()), static_cast<int>(high.size()), options_.match_thresh + slack);
  // The confident detections whose descriptor a track may learn: not overlapping two tracks'
  // predictions (two objects close together, or one box for both).
  std::vector<char> shared(detections.size(), 0);
  if (!looks.empty())
    for (size_t c = 0; c < high.size(); ++c) shared[high[c]] = crowding[c] > 1;
  auto look_of = [&](size_t i) { return looks.empty() || shared[i] ? nullptr : &looks[i]; };
  for (const auto& [r, c] : first.matches) {
    Track& t = tracks_[pool[static_cast<size_t>(r)]];
    const size_t i = high[static_cast<size_t>(c)];
    take(t, detections[i], timestamp_ms, false, look_of(i));
    ids[i] = t.id;
  }
  // Round 2: the live tracks left against the low-score detections, by IoU alone.
  std::vector<size_t> live_left;
  for (int r : first.unmatched_rows)
    if (tracks_[pool[static_cast<size_t>(r)]].state == State::kTracked) live_left.push_back(pool[static_cast<size_t>(r)]);
  Assignment second = min_cost_assignment(iou_costs(live_left, low, detections, false, Where::kLowScore, kSecondRoundLimit), static_cast<int>(live_left.size()),
                                          static_cast<int>(low.size()), kSecondRoundLimit);
  for (const auto& [r, c] : second.matches) {
    Track& t = tracks_[live_left[static_cast<size_t>(r)]];
    take(t, detections[low[static_cast<size_t>(c)]], timestamp_ms, /*low_score=*/true);
    ids[low[static_cast<size_t>(c)]] = t.id;
  }
  for (int r : second.unmatched_rows) tracks_[live_left[static_cast<size_t>(r)]].state = State::kLost;

  // Recovery (OC-SORT's observation-centric recovery): the confirmed tracks still unmatched
  // against the confident detections left, by IoU with the box each track was last seen at. An
  // object that re-emerges from behind another, or moves again after a stop, is found there when
  // its filter's prediction has run off.
  std::vector<size_t> high_left, unmatched;
  for (int c : first.unmatched_cols) high_left.push_back(high[static_cast<size_t>(c)]);
  for (size_t k : pool)
    if (!tracks_[k].matched_this_frame) unmatched.push_back(k);
  Assignment recovery = min_cost_assignment(
      iou_costs(unmatched, high_left, detections, false, Where::kRecovery, kRecoveryLimit, looks),
      static_cast<int>(unmatched.size()), static_cast<int>(high_left.size()), kRecoveryLimit + slack);
  for (const auto& [r, c] : recovery.matches) {
    Track& t = tracks_[unmatched[static_cast<size_t>(r)]];
    const size_t i = high_left[static_cast<size_t>(c)];
    take(t, detections[i], timestamp_ms, false, look_of(i));
    ids[i] = t.id;
  }
  {
    std::vector<size_t> left;
    for (int c : recovery.unmatched_cols) left.push_back(high_left[static_cast<size_t>(c)]);
    high_left = std::move(left);
  }
  // Gated recovery: the lost tracks still unmatched against the confident detections left, by the
  // distance of the detection's centre from the track's predicted centre under the filter's
  // uncertainty, which grows with the time unseen (DeepSORT's gate, chi-square 95%). An object that
  // comes out from behind another after a long occlusion, or only half of it at first, overlaps
  // neither its prediction nor where it was last seen, but comes out near where it was predicted.
  // With descriptors, one that comes out further off (within a 99.9% gate) is taken when it looks
  // the same, after every pair inside the gate (cost 1 + its distance).
  if (options_.motion) {
    std::vector<size_t> lost;
    for (int r : recovery.unmatched_rows)
      if (tracks_[unmatched[static_cast<size_t>(r)]].state == State::kLost) lost.push_back(unmatched[static_cast<size_t>(r)]);
    std::vector<double> costs(lost.size() * high_left.size(), kNoEdge);
    for (size_t r = 0; r < lost.size(); ++r) {
      const Track& t = tracks_[lost[r]];
      // OC-SORT's observation-centric view: where its last confident boxes, moving on as they
      // moved, put it now. The filter's velocity follows an object that starts, speeds up or turns
      // only slowly (its velocity noise is small), and a lost track's prediction runs on with it.
      double seen_cx = 0, seen_cy = 0;
      const size_t last = static_cast<size_t>(std::max(0, t.seen_count - 1));
      const bool observed = options_.observed_motion && t.seen_count >= 2 && t.seen_ms[last] > t.seen_ms[0];
      if (observed) {
        const double ahead = (timestamp_ms - t.seen_ms[last]) / (t.seen_ms[last] - t.seen_ms[0]);
        seen_cx = t.seen_x[last] + ahead * (t.seen_x[last] - t.seen_x[0]);
        seen_cy = t.seen_y[last] + ahead * (t.seen_y[last] - t.seen_y[0]);
      }
      for (size_t c = 0; c < high_left.size(); ++c) {
        const Detection& d = detections[high_left[c]];
        if (!options_.class_agnostic && d.class_id != t.class_id) continue;
        double d2 = BoxKalman::centre_distance2(t.filter, d);
        if (observed && d2 >= kGateChi2) d2 = std::min(d2, BoxKalman::centre_distance2(t.filter, d, seen_cx, seen_cy));
        const double dist = looks.empty() ? 0.0 : appearance_distance(t.look, looks[high_left[c]]);
        if (d2 < kGateChi2)
          costs[r * high_left.size() + c] = d2 / kGateChi2 + options_.appearance_weight * dist;
        else if (!looks.empty() && t.look.valid && d2 < options_.reid_chi2 && dist < options_.reid_distance)
          costs[r * high_left.size() + c] = 1.0 + options_.appearance_weight * dist;
      }
    }
    Assignment gated = min_cost_assignment(costs, static_cast<int>(lost.size()), static_cast<int>(high_left.size()), 1.0 + slack);
    for (const auto& [r, c] : gated.matches) {
      Track& t = tracks_[lost[static_cast<size_t>(r)]];
      const size_t i = high_left[static_cast<size_t>(c)];
      take(t, detections[i], timestamp_ms, false, look_of(i));
      ids[i] = t.id;
    }
    std::vector<size_t> left;
    for (int c : gated.unmatched_cols) left.push_back(high_left[static_cast<size_t>(c)]);
    high_left = std::move(left);
  }

  // Round 3: tracks born last frame against the confident detections left; matched, they are
  // confirmed and get their id; unmatched, they were noise and go.
  Assignment third = min_cost_assignment(
      iou_costs(unconfirmed, high_left, detections, true, Where::kPredicted, kUnconfirmedLimit, looks),
      static_cast<int>(unconfirmed.size()), static_cast<int>(high_left.size()), kUnconfirmedLimit + slack);
  for (const auto& [r, c] : third.matches) {
    Track& t = tracks_[unconfirmed[static_cast<size_t>(r)]];
    take(t, detections[high_left[static_cast<size_t>(c)]], timestamp_ms, false, look_of(high_left[static_cast<size_t>(c)]));
    t.id = next_id_++;
    ids[high_left[static_cast<size_t>(c)]] = t.id;
  }
  std::vector<char> drop(tracks_.size(), 0);
  for (int r : third.unmatched_rows) drop[unconfirmed[static_cast<size_t>(r)]] = 1;

  // New tracks from the confident detections no one took.
  for (int c : third.unmatched_cols) {
    const size_t i = high_left[static_cast<size_t>(c)];
    const Detection& d = detections[i];
    if (d.score < options_.new_track_thresh) continue;
    if (other_part_of_a_tracked_object(d)) continue;
    // An object hidden for longer than the buffer, back: its retired track, where it looks the same.
    if (const size_t k = looks.empty() ? retired_.size() : retired_match(d, looks[i]); k < retired_.size()) {
      tracks_.push_back(std::move(retired_[k]));
      retired_.erase(retired_.begin() + static_cast<std::ptrdiff_t>(k));
      drop.push_back(0);
      take(tracks_.back(), d, timestamp_ms, false, look_of(i));
      ids[i] = tracks_.back().id;
      continue;
    }
    Track t;
    t.class_id = d.class_id;
    t.score = d.score;
    t.filter = BoxKalman::initiate(d);
    t.last_box = d;
    t.whole_w = d.x2 - d.x1;
    t.whole_h = d.y2 - d.y1;
    t.remember(d, timestamp_ms);
    if (!looks.empty()) t.look = looks[i];
    t.predicted_to_ms = t.first_seen_ms = t.last_seen_ms = t.last_confident_ms = timestamp_ms;
    t.matched_this_frame = true;
    if (first_frame_) {  // nothing to confirm against on the first frame
      t.id = next_id_++;
      ids[i] = t.id;
    }
    tracks_.push_back(t);
    drop.push_back(0);
  }

  size_t kept = 0;
  for (size_t k = 0; k < tracks_.size(); ++k)
    if (!drop[k]) tracks_[kept++] = tracks_[k];
  tracks_.resize(kept);

  remove_duplicates();
  first_frame_ = false;
  return ids;
}

bool ByteTracker::other_part_of_a_tracked_object(const Detection& det) const {
  if (options_.split_box <= 0) return false;
  for (const Track& t : tracks_) {
    if (t.id <= 0 || t.state != State::kTracked || !t.matched_this_frame || t.whole_w <= 0 || t.whole_h <= 0) continue;
    if (!options_.class_agnostic && t.class_id != det.class_id) continue;
    const Detection& part = t.last_box;  // the box it took this frame
    if ((part.x2 - part.x1) * (part.y2 - part.y1) >= 0.8f * t.whole_w * t.whole_h || iou(part, det) >= 0.3f) continue;
    const float span_w = std::max(part.x2, det.x2) - std::min(part.x1, det.x1), span_h = std::max(part.y2, det.y2) - std::min(part.y1, det.y1);
    if (span_w <= options_.split_box * t.whole_w && span_h <= options_.split_box * t.whole_h) return true;
  }
  return false;
}

void ByteTracker::retire(double timestamp_ms) {
  const double buffer_ms = options_.track_buffer * 1000.0 / 30.0, reid_ms = options_.reid_buffer * 1000.0 / 30.0;
  // Only what can be re-identified: a confirmed track with a descriptor and a motion model.
  const bool keep = options_.appearance && options_.motion && options_.reid_distance > 0 && reid_ms > buffer_ms;
  for (const Track& t : tracks_)
    if (keep && timestamp_ms - t.last_seen_ms > buffer_ms && t.id > 0 && t.look.valid) retired_.push_back(t);
  std::erase_if(tracks_, [&](const Track& t) { return timestamp_ms - t.last_seen_ms > buffer_ms; });
  std::erase_if(retired_, [&](const Track& t) { return timestamp_ms - t.last_seen_ms > reid_ms; });
  for (Track& t : retired_) {
    t.filter.mean(7) = 0;  // a lost box keeps its size
    BoxKalman::predict(t.filter, (timestamp_ms - t.predicted_to_ms) / frame_interval_ms_);
    t.predicted_to_ms = std::max(t.predicted_to_ms, timestamp_ms);
  }
  if (picture_width_ > 0 && picture_height_ > 0)
    std::erase_if(retired_, [&](const Track& t) {
      const double cx = t.filter.mean(0), cy = t.filter.mean(1);
      return cx < 0 || cy < 0 || cx > picture_width_ || cy > picture_height_;
    });
}

size_t ByteTracker::retired_match(const Detection& det, const Appearance& look) const {
  // Anywhere in the gate, the nearest descriptor within reid_distance; failing that, right where a
  // track is predicted (chi-square under 1), the nearest within kRetiredNearLooks times that: an
  // object that comes out half seen or at the picture's edge shows some of what is around it.
  size_t best = retired_.size(), near_best = retired_.size();
  double nearest = options_.reid_distance, near_nearest = kRetiredNearLooks * options_.reid_distance;
  for (size_t k = 0; k < retired_.size(); ++k) {
    const Track& t = retired_[k];
    if (!options_.class_agnostic && t.class_id != det.class_id) continue;
    const double d2 = BoxKalman::centre_distance2(t.filter, det);
    if (d2 >= kRetiredGateChi2) continue;
    const double dist = appearance_distance(t.look, look);
    if (dist < nearest) {
      nearest = dist;
      best = k;
    }
    if (d2 < kRetiredNearChi2 && dist < near_nearest) {
      near_nearest = dist;
      near_best = k;
    }
  }
  return best < retired_.size() ? best : near_best;
}

void ByteTracker::mark_occluded() {
  // A sweep over the predicted boxes sorted by their left edge: each box meets only the boxes that
  // start before it ends (few), not every other track.
  const size_t n = tracks_.size();
  std::vector<Detection> boxes(n);
  std::vector<uint32_t> order(n);
  for (size_t k = 0; k < n; ++k) {
    boxes[k] = BoxKalman::box_of(tracks_[k].filter);
    order[k] = static_cast<uint32_t>(k);
    tracks_[k].occluded = false;
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return boxes[a].x1 < boxes[b].x1; });
  for (size_t i = 0; i < n; ++i) {
    const Detection& a = boxes[order[i]];
    const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1);
    for (size_t j = i + 1; j < n && boxes[order[j]].x1 < a.x2; ++j) {
      const Detection& b = boxes[order[j]];
      const float iy = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
      if (iy <= 0) continue;
      const float overlap = (std::min(a.x2, b.x2) - b.x1) * iy;  // b starts inside a
      if (overlap > kOccludedOverlap * area_a) tracks_[order[i]].occluded = true;
      if (overlap > kOccludedOverlap * (b.x2 - b.x1) * (b.y2 - b.y1)) tracks_[order[j]].occluded = true;
    }
  }
}

void ByteTracker::remove_duplicates() {
  // A lost track and a live one over the same box: one object with two tracks (it was lost and got
  // a new one), and the younger of the two is the duplicate. Only where they can be one object:
  // - of one class (a lost track of another class coasting over a live one is another object);
  // - the live one born after the lost one was last seen. Two tracks live at the same time were
  //   two objects: the lost one is behind the live one (one box for both, or hidden), and
  //   dropping the live one (or the lost one) handed its object a new id a frame later.
  std::vector<size_t> live, lost;
  for (size_t k = 0; k < tracks_.size(); ++k) {
    if (tracks_[k].id == 0) continue;
    (tracks_[k].state == State::kTracked ? live : lost).push_back(k);
  }
  if (live.empty() || lost.empty()) return;
  std::vector<Detection> boxes(tracks_.size());
  for (size_t k : live) boxes[k] = BoxKalman::box_of(tracks_[k].filter);
  for (size_t k : lost) boxes[k] = BoxKalman::box_of(tracks_[k].filter);
  std::vector<char> drop(tracks_.size(), 0);
  for (size_t a : live)
    for (size_t b : lost) {
      if (drop[a]) break;
      if (drop[b] || 1.0 - iou(boxes[a], boxes[b]) >= kDuplicateLimit) continue;
      if (!options_.class_agnostic && tracks_[a].class_id != tracks_[b].class_id) continue;
      if (tracks_[a].first_seen_ms <= tracks_[b].last_seen_ms) continue;
      const double age_a = tracks_[a].last_seen_ms - tracks_[a].first_seen_ms;
      const double age_b = tracks_[b].last_seen_ms - tracks_[b].first_seen_ms;
      drop[age_a > age_b ? b : a] = 1;
    }
  size_t kept = 0;
  for (size_t k = 0; k < tracks_.size(); ++k)
    if (!drop[k]) tracks_[kept++] = tracks_[k];
  tracks_.resize(kept);
}

size_t ByteTracker::live_track_count() const {
  size_t n = 0;
  for (const Track& t : tracks_) n += (t.id > 0 && t.state == State::kTracked && t.matched_this_frame) ? 1 : 0;
  return n;
}

}  // namespace sd::track

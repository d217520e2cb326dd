// ByteTrack (Zhang et al., ECCV 2022), per source: which detection of a frame is which object.
//
// Each frame: every track's Kalman filter predicts to the frame's capture time; the confident
// detections (score >= track_thresh) are matched to the tracks, live and lost, by IoU weighted by
// the detection's score; then the low-score ones (>= low_thresh) to the live tracks left, by IoU
// or by how much of the box lies inside the prediction (a partly hidden object scores low, and
// this round keeps its identity without letting its shrinking box bend the filter's velocity);
// then the confirmed tracks still unmatched to the confident detections left, by IoU with their
// prediction or their last box (OC-SORT's recovery), then the lost ones by the distance of the
// detection from their predicted centre under the filter's uncertainty (DeepSORT's gate); then
// the tracks born last frame to the confident detections left (the gated round also looks for a
// lost track where its last boxes' own motion puts it, OC-SORT's observation-centric view). A confident detection left over
// (>= new_track_thresh) starts a track, confirmed when it is matched again (at once on the first
// frame); a track unmatched is lost, and removed when lost for longer than the buffer (with a
// descriptor, kept until reid_buffer for a leftover detection that looks the same: see there). Class-aware
// unless class_agnostic: a track only takes detections of its own class. A confident box that is
// only the part still seen of an object partly behind another (narrower or shorter than the object
// was when seen alone, while its prediction overlaps another track's) moves the filter as the
// whole object's box, as large as predicted, against the box's edges on the side seen
// (partial_box).
//
// Appearance (with `appearance` on and the detections' descriptors given, track/appearance.h):
// each track keeps a moving average of its detections' colour descriptors, updated only from a
// confident box that no other track's prediction overlaps (a box shared by two objects, or merged
// by the detector's NMS, would teach it the other's colours). In every round but the low-score
// one (a partly hidden object's box shows its occluder), a pair the motion gate lets through
// costs appearance_weight x the descriptors' distance more: the cue reorders the pairs that the
// boxes allow (which of two objects close together is which), it never lets a pair through that
// the boxes do not, so a poor descriptor (alike colours, changing light) costs little. One
// exception, in the gated round: a lost track and a detection just outside its 95% gate, within a
// 99.9% one, whose descriptors are very close (reid_distance), may match, at a cost above every
// pair inside the gate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/detection.h"
#include "track/appearance.h"

namespace sd::track {

struct TrackerOptions {
  double track_thresh = 0.5;      // confident / low-score split (ByteTrack's track_thresh)
  double low_thresh = 0.1;        // below: not used at all
  double new_track_thresh = 0.6;  // a leftover detection starts a track from here (track_thresh + 0.1)
  double match_thresh = 0.8;      // first round: pairs with 1 - IoU * score under this can match
  double track_buffer = 30;       // a lost track is kept this many frames at 30 fps (30: 1 s)
  bool class_agnostic = false;
  // false: the IoU tracker (--track iou): tracks are matched where they were last seen, with no
  // motion model (for still or slow objects; a little cheaper).
  bool motion = true;
  // The appearance cue (--track-appearance): used when update() is given descriptors.
  bool appearance = true;
  double appearance_weight = 1.0;  // cost added per unit of descriptor distance (0..1)
  // A lost track may also take a confident detection left over beyond its gated round's 95% gate
  // when their descriptors are this close (0: never), within this wider gate (chi-square, 2 dof;
  // 13.8: 99.9%): an object that comes out from an occlusion far from where it was predicted.
  double reid_distance = 0.05;
  double reid_chi2 = 13.8;
  // A lost track with a descriptor is kept past track_buffer, until this many frames (at 30 fps)
  // after it was last seen, for one use only: a confident detection of its class left over at the
  // end of the rounds (one that would start a new track), within a wide gate of its prediction
  // (chi-square 40, 2 dof) and with a descriptor within reid_distance of its own, takes it back
  // instead: an object hidden for longer than the buffer comes back with its id; right where the
  // track is predicted (chi-square under 1), a descriptor within 3 reid_distance will do (an
  // object coming out half seen shows some of its surroundings). It takes nothing a track in the
  // buffer could take. At most track_buffer: never.
  double reid_buffer = 90;
  // A confident detection that would start a track starts none where it is the other part of an
  // object the detector split in two (an object partly hidden in the middle, seen as its left and
  // right parts): a live track of its class took a box this frame smaller than 0.8 of its object's
  // area seen alone, the two boxes overlap little (IoU < 0.3), and together they span at most this
  // many times that object's width and height (0: never).
  double split_box = 1.5;
  // A confident box narrower or shorter than this share of the track's box when last seen alone,
  // while the track's prediction is overlapped by another track's, is the part of the object
  // still seen: the filter is given the whole box, as large as predicted, against the box's edges
  // on the side seen, so that it keeps the object's size, centre and velocity (0: never).
  double partial_box = 0.8;
  // The gated round also looks for a lost track where its last 4 confident boxes, moving on as
  // they moved, put it now (OC-SORT's observation-centric motion), under the filter's uncertainty.
  bool observed_motion = true;
};

class ByteTracker {
 public:
  // frame_interval_ms: the source's nominal frame interval, the filter's time unit (dt = 1 is one
  // frame as ByteTrack predicts); 0 or less: 1000 / 30.
  explicit ByteTracker(TrackerOptions options = {}, double frame_interval_ms = 1000.0 / 30);
  ~ByteTracker();
  ByteTracker(ByteTracker&&) noexcept;
  ByteTracker& operator=(ByteTracker&&) noexcept;

  // One frame's detections at its capture time (non-decreasing from call to call). Returns each
  // detection's track id, in the detections' order; -1 for a detection no confirmed track took
  // (a low score unmatched, a track born this frame and not yet confirmed).
  // looks: empty, or one descriptor per detection (the appearance cue, when options say so).
  std::vector<int64_t> update(std::span<const Detection> detections, double timestamp_ms,
                              std::span<const Appearance> looks = {});

  const TrackerOptions& options() const { return options_; }

  // The picture's size in the detections' pixels (0: unknown, the default). Known, a lost track
  // whose predicted centre is out of the picture has left it and is removed.
  void set_picture_size(int width, int height) {
    picture_width_ = width;
    picture_height_ = height;
  }

  // The confirmed tracks matched in the last frame.
  size_t live_track_count() const;
  // Every id handed out so far (ids are 1, 2, 3, ... per tracker).
  int64_t ids_issued() const { return next_id_ - 1; }

 private:
  // Defined in byte_tracker.cpp: the filter's Eigen matrices stay out of this header, which the
  // run's options include everywhere (Eigen's parameter names collide with glibc's resolv.h macros).
  struct Track;

  // Which box of a track a detection is compared with: the prediction; (low score) the prediction,
  // by IoU or the share of the detection inside it; (recovery) the better of the prediction and
  // the box last seen.
  enum class Where { kPredicted, kLowScore, kRecovery };
  // Costs rows = tracks (indices into tracks_), cols = detections (indices into dets): 1 - IoU
  // (times the detection's score with fuse_score); no edge for another class or no overlap.
  // With looks, each edge under `limit` also costs appearance_weight x the descriptors' distance
  // (not for kLowScore) and those at `limit` or above are none; crowding, when given, gets per
  // detection the number of tracks overlapping it by more than kCrowdedOverlap.
  std::vector<double> iou_costs(const std::vector<size_t>& tracks, const std::vector<size_t>& dets,
                                std::span<const Detection> detections, bool fuse_score, Where where, double limit,
                                std::span<const Appearance> looks = {}, std::vector<int>* crowding = nullptr) const;
  template <bool kLooks>
  std::vector<double> costs_of(const std::vector<size_t>& tracks, const std::vector<size_t>& dets,
                               std::span<const Detection> detections, bool fuse_score, Where where, double limit,
                               std::span<const Appearance> looks, std::vector<int>* crowding) const;
  // What the appearance cue adds to a round's cost limit (its weight, when it is used).
  double looks_slack(std::span<const Appearance> looks) const {
    return looks.empty() ? 0.0 : options_.appearance_weight;
  }
  // look: the detection's descriptor to learn from, or nullptr (none, or not to be trusted).
  void take(Track& track, const Detection& det, double timestamp_ms, bool low_score = false,
            const Appearance* look = nullptr);
  void remove_duplicates();
  // Sets each track's `occluded`: its predicted box overlapped by another track's (> 10% of it).
  void mark_occluded();
  // Tracks lost for longer than the buffer: into retired_ where reid_buffer keeps them (predicted
  // to the frame's time like lost ones), gone otherwise; retired ones past reid_buffer or out of
  // the picture: gone.
  void retire(double timestamp_ms);
  // The retired track (index) that a leftover confident detection with descriptor `look` is, or
  // retired_.size(): the nearest descriptor within reid_distance, of its class, in the gate.
  size_t retired_match(const Detection& det, const Appearance& look) const;
  // The box the filter is given for a confident detection (the whole object's, see partial_box).
  Detection whole_box(const Track& track, const Detection& det) const;
  // Whether a detection left over is the other part of an object a live track follows (split_box).
  bool other_part_of_a_tracked_object(const Detection& det) const;

  TrackerOptions options_;
  double frame_interval_ms_;
  std::vector<Track> tracks_;
  std::vector<Track> retired_;  // lost for longer than track_buffer, kept for reid_buffer
  int64_t next_id_ = 1;
  int picture_width_ = 0, picture_height_ = 0;
  bool first_frame_ = true;
};

}  // namespace sd::track

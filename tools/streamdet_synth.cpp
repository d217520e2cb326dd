// streamdet_synth: makes the project's own test data (synthetic clips with ground truth, random
// training frames for tools/train_tiny_detector.py) and scores detections against ground truth.
//   streamdet_synth clip   --video clip.mp4 --truth truth.jsonl [--width --height --frames --fps --seed --objects]
//                          [--motion bounce|traverse --stop-percent P --keep-every N]
//   streamdet_synth frames --out-dir DIR --count N --seed S [--sizes 320x192,256x256] [--min-objects --max-objects]
//                          [--coco] [--yolo]  (the truth also as instances.json / labels/*.txt + data.yaml)
//   streamdet_synth still  --image f.png --index i [scene options] [--draw-truth]
//   streamdet_synth eval   --truth truth.jsonl --detections dets.jsonl [--iou 0.5]
//   streamdet_synth mot    --truth truth.jsonl --tracks tracked.jsonl [--iou 0.5] [--class-agnostic] [--json]
//                          [--switches switches.jsonl]
//   streamdet_synth jitter --truth truth.jsonl --out dets.jsonl [--jitter 0.05 --seed 1]
//   streamdet_synth track  --detections dets.jsonl --out tracked.jsonl [ByteTrack options]
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "eval/clip_eval.h"
#include "eval/mot_clip_eval.h"
#include "eval/track_replay.h"
#include "synthetic/clip_writer.h"
#include "synthetic/scene.h"

namespace {

void add_scene_options(CLI::App* cmd, sd::synth::SceneOptions& o) {
  cmd->add_option("--width", o.width, "frame width in pixels")->capture_default_str();
  cmd->add_option("--height", o.height, "frame height in pixels")->capture_default_str();
  cmd->add_option("--fps", o.fps, "frames per second")->capture_default_str();
  cmd->add_option("--seed", o.seed, "scene seed (same seed, same pixels and boxes)")->capture_default_str();
  cmd->add_option("--objects", o.num_objects, "number of moving objects (traverse: over the whole clip)")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--motion",
         [&o](const std::string& name) {
           if (!sd::synth::parse_motion(name, o.motion)) throw CLI::ValidationError("--motion", "bounce or traverse");
         },
         "bounce (objects bounce in the frame for the whole clip) or traverse (objects enter, cross the frame, "
         "some stop, and leave: tracking clips)")
      ->default_str("bounce");
  cmd->add_option("--stop-percent", o.stop_percent, "traverse: percent of the objects that stop once on the way")
      ->capture_default_str();
}

int report(const sd::Status& s) {
  if (s) return 0;
  std::fprintf(stderr, "streamdet_synth: %s\n", s.error().message.c_str());
  return sd::exit_code_for(s.error().code);
}

sd::Result<std::vector<cv::Size>> parse_sizes(const std::string& text) {
  std::vector<cv::Size> sizes;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int w = 0, h = 0;
    if (std::sscanf(item.c_str(), "%dx%d", &w, &h) != 2 || w < 16 || h < 16)
      return sd::fail(sd::ErrorCode::kUsage, "--sizes: '" + item + "' is not WxH (at least 16x16)");
    sizes.emplace_back(w, h);
  }
  if (sizes.empty()) return sd::fail(sd::ErrorCode::kUsage, "--sizes is empty");
  return sizes;
}

sd::Status write_still(const sd::synth::SceneOptions& o, int index, const std::string& path, bool draw_truth) {
  cv::Mat frame;
  std::vector<sd::synth::TruthBox> truth;
  sd::synth::SyntheticScene(o).render(index, frame, truth);
  if (draw_truth) {
    for (const auto& t : truth) {
      const cv::Scalar colour = t.ignore ? cv::Scalar(128, 128, 128) : cv::Scalar(255, 255, 255);
      cv::rectangle(frame, cv::Point(static_cast<int>(t.box.x1), static_cast<int>(t.box.y1)),
                    cv::Point(static_cast<int>(t.box.x2) - 1, static_cast<int>(t.box.y2) - 1), colour, 1);
    }
  }
  if (!cv::imwrite(path, frame)) return sd::fail(sd::ErrorCode::kOutput, "cannot write " + path);
  std::printf("%s\n", sd::synth::truth_jsonl_line(path, index, 1000.0 * index / o.fps, truth).c_str());
  return sd::ok();
}

void print_mot(const sd::eval::MotClipEvaluation& e, const sd::eval::MotClipOptions& o) {
  const sd::eval::MotMetrics& m = e.metrics;
  std::printf("frames %lld (missing %lld, unexpected %lld), IoU >= %.2f, %s\n", static_cast<long long>(m.frames),
              static_cast<long long>(e.frames_missing), static_cast<long long>(e.frames_unexpected), o.iou_threshold,
              o.class_aware ? "class-aware" : "class-agnostic");
  std::printf("truth boxes %lld (ignored %lld), hypotheses %lld (on ignored truth %lld, untracked detections %lld)\n",
              static_cast<long long>(m.truth_boxes), static_cast<long long>(e.ignored_truth),
              static_cast<long long>(m.hypothesis_boxes), static_cast<long long>(e.ignored_hypotheses),
              static_cast<long long>(e.untracked_detections));
  std::printf("MOTA %.4f  MOTP %.4f (mean 1 - IoU)  IDF1 %.4f  IDP %.4f  IDR %.4f\n", m.mota, m.motp, m.idf1, m.idp,
              m.idr);
  std::printf("HOTA %.4f  DetA %.4f  AssA %.4f  LocA %.4f\n", m.hota.hota, m.hota.deta, m.hota.assa, m.hota.loca);
  const double per_20 = m.truth_tracks > 0 ? 20.0 * static_cast<double>(m.id_switches) / static_cast<double>(m.truth_tracks) : 0.0;
  std::printf("ID switches %lld (%.2f per 20 tracks)  fragmentations %lld  FP %lld  misses %lld\n",
              static_cast<long long>(m.id_switches), per_20, static_cast<long long>(m.fragmentations),
              static_cast<long long>(m.false_positives), static_cast<long long>(m.misses));
  std::printf("truth tracks %lld: mostly tracked %lld, partly tracked %lld, mostly lost %lld\n",
              static_cast<long long>(m.truth_tracks), static_cast<long long>(m.mostly_tracked),
              static_cast<long long>(m.partially_tracked), static_cast<long long>(m.mostly_lost));
}

sd::Status print_eval(const std::string& truth, const std::string& dets, float iou_threshold) {
  sd::eval::MatchOptions options;
  options.iou_threshold = iou_threshold;
  SD_ASSIGN_OR_RETURN(auto ev, sd::eval::evaluate_clip(truth, dets, options));
  const auto& names = sd::synth::class_names();
  std::printf("frames %lld (missing %lld, unexpected %lld), IoU >= %.2f\n", static_cast<long long>(ev.frames),
              static_cast<long long>(ev.frames_missing), static_cast<long long>(ev.frames_unexpected), iou_threshold);
  std::printf("%-10s %6s %6s %6s %8s %9s %7s\n", "class", "TP", "FP", "FN", "ignored", "precision", "recall");
  auto row = [](const std::string& name, const sd::eval::MatchCounts& c) {
    std::printf("%-10s %6lld %6lld %6lld %8lld %9.4f %7.4f\n", name.c_str(), static_cast<long long>(c.true_positives),
                static_cast<long long>(c.false_positives), static_cast<long long>(c.false_negatives),
                static_cast<long long>(c.ignored_detections), c.precision(), c.recall());
  };
  for (size_t c = 0; c < ev.per_class.size(); ++c)
    row(c < names.size() ? names[c] : std::to_string(c), ev.per_class[c]);
  row("all", ev.total);
  return sd::ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamdet_synth: synthetic test clips with ground truth, training frames, and scoring"};
  app.require_subcommand(1);

  sd::synth::SceneOptions clip_options;
  std::string video, truth;
  auto* clip = app.add_subcommand("clip", "write a synthetic clip and its ground truth (JSONL)");
  add_scene_options(clip, clip_options);
  clip->add_option("--frames", clip_options.frames, "number of frames of the scene")->capture_default_str();
  clip->add_option("--keep-every", clip_options.keep_every,
                   "write only every N-th frame (frames dropped; the video at fps / N, true timestamps in the truth)")
      ->capture_default_str();
  clip->add_option("--video", video, "output video (.mp4: mp4v, .avi: MJPG)")->required();
  clip->add_option("--truth", truth, "output ground truth JSONL")->required();

  sd::synth::FrameDumpOptions dump;
  std::string out_dir, sizes = "320x192";
  auto* frames = app.add_subcommand("frames", "write independent random frames + labels.jsonl (training data)");
  frames->add_option("--out-dir", out_dir, "output folder (images/ and labels.jsonl)")->required();
  frames->add_option("--count", dump.count, "number of frames")->capture_default_str();
  frames->add_option("--seed", dump.seed, "base seed (keep away from test clip seeds)")->capture_default_str();
  frames->add_option("--sizes", sizes, "comma-separated frame sizes WxH, one picked per frame")->capture_default_str();
  frames->add_option("--min-objects", dump.min_objects, "fewest objects per scene")->capture_default_str();
  frames->add_option("--max-objects", dump.max_objects, "most objects per scene")->capture_default_str();
  frames->add_flag("--coco", dump.coco, "also write the truth as a COCO instances file (instances.json; streamdet val's input)");
  frames->add_flag("--yolo", dump.yolo, "also write the truth in YOLO's form (labels/*.txt, data.yaml)");

  sd::synth::SceneOptions still_options;
  int still_index = 0;
  bool draw_truth = false;
  std::string image;
  auto* still = app.add_subcommand("still", "write one frame of a scene as an image and print its ground truth");
  add_scene_options(still, still_options);
  still->add_option("--index", still_index, "frame index")->capture_default_str();
  still->add_option("--frames", still_options.frames, "clip length (traverse: entries spread over it)")
      ->capture_default_str();
  still->add_option("--image", image, "output image")->required();
  still->add_flag("--draw-truth", draw_truth, "draw the ground-truth boxes (grey: ignored)");

  std::string eval_truth, eval_dets;
  float eval_iou = 0.5f;
  auto* eval = app.add_subcommand("eval", "precision and recall of detections (JSONL) against ground truth (JSONL)");
  eval->add_option("--truth", eval_truth, "ground truth JSONL from `clip`")->required();
  eval->add_option("--detections", eval_dets, "detections JSONL from `streamdet run --detections`")->required();
  eval->add_option("--iou", eval_iou, "IoU needed for a match")->capture_default_str();

  std::string mot_truth, mot_tracks;
  sd::eval::MotClipOptions mot_options;
  bool mot_as_json = false, mot_agnostic = false;
  auto* mot = app.add_subcommand("mot", "MOT metrics (MOTA, IDF1, ID switches, ...) of tracked detections against ground truth");
  mot->add_option("--truth", mot_truth, "ground truth JSONL from `clip` (with object_id)")->required();
  mot->add_option("--tracks", mot_tracks, "detections JSONL with track_id (`streamdet run --track`, `track`)")->required();
  mot->add_option("--iou", mot_options.iou_threshold, "IoU needed for a match")->capture_default_str();
  mot->add_flag("--class-agnostic", mot_agnostic, "a hypothesis may match truth of any class");
  mot->add_flag("--json", mot_as_json, "print one JSON object instead of the table");
  std::string mot_switches;
  mot->add_option("--switches", mot_switches, "also write each ID switch (frame, object_id, from_track, to_track) as JSONL");

  std::string jitter_truth, jitter_out;
  sd::eval::JitterOptions jitter_options;
  auto* jitter = app.add_subcommand("jitter", "detector-like detections from ground truth: boxes jittered, scored");
  jitter->add_option("--truth", jitter_truth, "ground truth JSONL from `clip`")->required();
  jitter->add_option("--out", jitter_out, "detections JSONL to write")->required();
  jitter->add_option("--jitter", jitter_options.jitter, "each edge moves by up to this fraction of the box's side")
      ->capture_default_str();
  jitter->add_option("--seed", jitter_options.seed, "jitter seed")->capture_default_str();
  jitter->add_option("--score", jitter_options.visible_score, "confidence of the boxes seen")->capture_default_str();
  jitter->add_option("--hidden-score", jitter_options.hidden_score,
                     "confidence of the boxes the truth ignores (mostly hidden, tiny)")
      ->capture_default_str();

  std::string track_dets, track_out, track_video;
  bool no_picture = false;
  sd::track::TrackerOptions tracker_options;
  double frame_interval_ms = 0;
  auto* track = app.add_subcommand("track", "run the ByteTrack tracker over a detections JSONL, by timestamp");
  track->add_option("--detections", track_dets, "detections JSONL (`streamdet run --detections`, `jitter`)")->required();
  track->add_option("--out", track_out, "tracked JSONL to write (detections with track_id)")->required();
  track->add_option("--track-thresh", tracker_options.track_thresh, "confident / low-score split")->capture_default_str();
  track->add_option("--low-thresh", tracker_options.low_thresh, "detections below are not used")->capture_default_str();
  track->add_option("--new-track-thresh", tracker_options.new_track_thresh, "a leftover detection starts a track from here")
      ->capture_default_str();
  track->add_option("--match-thresh", tracker_options.match_thresh, "first round: pairs with 1 - IoU x score under this")
      ->capture_default_str();
  track->add_option("--track-buffer", tracker_options.track_buffer, "lost tracks kept this many frames at 30 fps")
      ->capture_default_str();
  track->add_flag("--agnostic", tracker_options.class_agnostic, "tracks take detections of any class");
  track->add_option("--video", track_video,
                    "the video the detections were made on: the appearance cue reads the boxes' colours there")
      ->check(CLI::ExistingFile);
  track->add_option("--appearance-weight", tracker_options.appearance_weight,
                    "cost per unit of descriptor distance (with --video; 0: motion alone)")
      ->capture_default_str();
  track->add_option("--partial-box", tracker_options.partial_box,
                    "a confident box under this share of the track's size alone, its prediction overlapped by "
                    "another's, is the part seen: the filter gets the whole box (0: never)")
      ->capture_default_str();
  track->add_option("--observed-motion", tracker_options.observed_motion,
                    "gated round: also look for a lost track where its last boxes' own motion puts it")
      ->capture_default_str();
  track->add_flag("--no-picture", no_picture, "do not tell the tracker the video's size (lost tracks leaving it are kept)");
  track->add_option("--reid-distance", tracker_options.reid_distance,
                    "a lost track re-found beyond its gate when the descriptors are this close (0: never)")
      ->capture_default_str();
  track->add_option("--reid-chi2", tracker_options.reid_chi2, "... within this wider gate (chi-square, 2 dof)")
      ->capture_default_str();
  track->add_option("--frame-interval-ms", frame_interval_ms,
                    "the filter's time unit; 0: the median gap between the file's timestamps")
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);

  if (*clip) return report(sd::synth::write_synthetic_clip(clip_options, video, truth));
  if (*frames) {
    auto parsed = parse_sizes(sizes);
    if (!parsed) return report(tl::unexpected(parsed.error()));
    dump.sizes = *parsed;
    return report(sd::synth::write_training_frames(dump, out_dir));
  }
  if (*still) return report(write_still(still_options, still_index, image, draw_truth));
  if (*mot) {
    mot_options.class_aware = !mot_agnostic;
    auto evaluation = sd::eval::evaluate_tracking_clip(mot_truth, mot_tracks, mot_options);
    if (!evaluation) return report(tl::unexpected(evaluation.error()));
    if (!mot_switches.empty()) {
      std::ofstream f(mot_switches);
      f << sd::eval::mot_switches_jsonl(*evaluation);
      if (!f) return report(sd::fail(sd::ErrorCode::kOutput, "cannot write " + mot_switches));
    }
    if (mot_as_json) std::printf("%s\n", sd::eval::mot_json(*evaluation, mot_options).c_str());
    else print_mot(*evaluation, mot_options);
    return 0;
  }
  if (*jitter) {
    auto truth_frames = sd::eval::read_frames_jsonl(jitter_truth);
    if (!truth_frames) return report(tl::unexpected(truth_frames.error()));
    return report(sd::eval::write_frames_jsonl(sd::eval::jitter_truth(*truth_frames, jitter_options), jitter_out));
  }
  if (*track) {
    auto frames = sd::eval::read_frames_jsonl(track_dets);
    if (!frames) return report(tl::unexpected(frames.error()));
    std::vector<std::vector<sd::track::Appearance>> looks;
    if (!track_video.empty() && tracker_options.appearance_weight > 0) {
      auto described = sd::eval::describe_boxes(*frames, track_video);
      if (!described) return report(tl::unexpected(described.error()));
      looks = std::move(*described);
    }
    return report(sd::eval::write_frames_jsonl(
        sd::eval::run_tracker(std::move(*frames), tracker_options, frame_interval_ms, looks,
                              track_video.empty() || no_picture ? std::pair{0, 0} : sd::eval::video_size(track_video)),
        track_out));
  }
  return report(print_eval(eval_truth, eval_dets, eval_iou));
}

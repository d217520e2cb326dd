// Everything `streamdet run` was asked to do, as one explicit struct handed down (no globals).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analytics/place_specs.h"
#include "postprocess/layout.h"
#include "sources/source.h"
#include "track/byte_tracker.h"

namespace sd {

struct ModelOptions {
  std::string model;           // .onnx or Darknet .cfg
  std::string weights;         // Darknet .weights (default: beside the .cfg)
  std::string engine = "auto";  // auto: native for ONNX, opencv for Darknet
  std::string device = "auto";  // auto (CUDA when usable), cpu, cuda, cuda:N (native engine)
  std::string precision = "auto";  // auto | fp32 | fp16 | bf16: the native engine's arithmetic (fp16: on the GPU)
  bool cuda_graphs = true;     // --cuda-graphs on|off: the native engine's GPU runs replayed as CUDA graphs
  std::string preprocess_on = "auto";  // --preprocess-on auto|cpu|gpu: where frames are letterboxed (runtime/preprocess_on.h)
  std::string postprocess_on = "auto";  // --postprocess-on auto|cpu|gpu: where the head is decoded and NMS'd (runtime/postprocess_on.h)
  int threads = 0;             // inference threads in all, divided among the workers (0: every core)
  std::string input_size = "auto";  // auto | W,H | N
  Layout layout = Layout::kAuto;
  std::string preprocess;      // overrides, see preprocess_spec.h
  std::string classes_file;    // one class name per line
  float conf = 0.25f;
  float iou = 0.45f;
  bool agnostic = false;
  int max_det = 300;
  uint64_t max_memory_bytes = 0;  // --max-memory; 0: default_memory_budget() (core/memory_budget.h)
  int engine_profile_rows = -1;  // --engine-profile: per-node times at exit, the N slowest (0: all); -1: off
};

// What happens to frames a stage cannot take yet. kAuto: block for files and images (lossless,
// ordered), latest for live sources (camera, stream, GStreamer: always the freshest frame).
enum class FramePolicy { kAuto, kBlock, kLatest, kDropOldest };

// --track: who keeps object identities. kAuto: ByteTrack for video files, cameras, streams and
// GStreamer pipelines, off for images (no motion between them) and Redis sources (a consumer
// group splits a camera's frames among workers, so no one worker sees them all).
enum class TrackMode { kAuto, kByteTrack, kIou, kOff };

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> sources;
  std::string output;          // annotated video; "{i}" / "{name}" make one per source
  std::string detections;      // JSONL (one file for all sources; each line names its source)
  std::vector<std::string> sinks;  // --sink: more outputs, each a path or URI (sinks/sink_factory.h)
  std::optional<std::string> redis_password;  // REDISCLI_AUTH, for redis:// URIs without one
  int64_t claim_after_ms = 30000;  // --claim-after: Redis entries pending this long on another consumer are claimed
  uint64_t max_pixels = uint64_t{8192} * 8192;  // --max-pixels: frames from the wire larger than this are refused
  std::string profile_json;
  std::string trace;           // Chrome trace-event JSON
  std::string report;          // the profile as a self-contained HTML page (report/html_report.h)
  int64_t max_frames = -1;     // per source; -1: all
  bool quiet = false;
  bool verbose = false;        // let FFmpeg, OpenCV and GStreamer print their own messages
  bool show = false;           // live view window
  std::string serve;           // --serve [host:]port: live web view, /metrics, /health (serve/http_server.h); empty: off
  double serve_fps = 10;       // --serve-fps: frames per second per source sent to the web view, at most
  std::string serve_token;     // --serve-token: every endpoint needs it (never logged)

  int workers = 0;             // inference workers, each with its own execution context (0: auto, worker_plan.h)
  int decode_threads = 0;      // per video file; 0: the cores inference leaves free, at least 1
  VideoDecode decode = VideoDecode::kAuto;  // --decode: video decoded by NVDEC or the CPU (sources/nvdec_packet_decoder.h)
  int batch = 1;               // frames per inference call (micro-batching, across sources)
  double batch_wait_ms = 2.0;  // how long a worker waits for a batch to fill
  FramePolicy policy = FramePolicy::kAuto;
  int queue = 4;               // queue length for --policy drop-oldest (and block, per stage)
  int every = 1;               // infer every Nth frame (the others are dropped and counted)
  double max_age_ms = 0;       // drop frames older than this when a worker takes them (0: off)
  // --drain-timeout: after Ctrl-C or SIGTERM, frames in flight are finished for this long at most,
  // then dropped (a Redis source leaves their entries pending for another worker)
  double drain_timeout_ms = 5000;
  // Live sources (streams, cameras, live GStreamer pipelines; sources/supervised_source.h).
  bool reconnect = true;            // --reconnect auto|never: reopen a live source that went down
  double stall_timeout_ms = 5000;   // --stall-timeout: no frame for this long is an outage
  double reconnect_for_ms = 0;      // --reconnect-for: give up after this long down (0: never)
  // Tracking (track/byte_tracker.h): the mode and ByteTrack's parameters.
  TrackMode track = TrackMode::kAuto;
  track::TrackerOptions tracker;
  // Counting (analytics/lines_zones.h): --line and --zone, checked for syntax; --events.
  std::vector<PlaceSpec> places;
  std::string events;          // JSON Lines, one line per crossing, entry or exit
};

const char* frame_policy_name(FramePolicy p);
const char* track_mode_name(TrackMode m);

}  // namespace sd

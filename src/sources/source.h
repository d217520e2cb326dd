// Frame sources: video files, images/folders/globs, V4L2 cameras, GStreamer pipelines,
// RTSP/HTTP streams. open_source() picks the kind from the spec string.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/frame.h"
#include "core/frame_outcome.h"

namespace sd {

class SourceHealth;  // runtime/source_health.h

// --decode (sources/nvdec_packet_decoder.h says what each does).
enum class VideoDecode { kAuto, kCpu, kNvdec };

enum class SourceKind { kVideoFile, kImages, kCamera, kGStreamer, kStream, kRedis };

const char* source_kind_name(SourceKind kind);

struct SourceInfo {
  std::string uri;              // what the user passed
  SourceKind kind = SourceKind::kVideoFile;
  double fps = 0;               // 0 when unknown
  int width = 0, height = 0;    // of the first frame
  int64_t frame_count = -1;     // -1 when unknown (live, stream)
  bool live = false;            // camera / network / gstreamer: frames arrive on their own clock
  std::string decoder;          // what decodes a video file's or stream's frames ("cpu (h264)", "nvdec (H.264 on cuda:0)"); "" for others
};

class Source {
 public:
  virtual ~Source() = default;
  virtual const SourceInfo& info() const = 0;
  // Fills `frame` and returns true, or returns false at the end of the source.
  // A frame that cannot be decoded returns kCorruptFrame (the caller may skip it and go on);
  // a source that broke returns kSource.
  virtual Result<bool> read(Frame& frame) = 0;
  // After the end: what was lost when the source was damaged or cut short (frames the decoder
  // could not make, a read error, fewer frames than the container declares, the end of the data
  // before the end of the file), as one phrase naming the source; nullopt when it was whole.
  virtual std::optional<std::string> damage() const { return std::nullopt; }
  // What became of a frame this source delivered, told exactly once per frame (a frame that
  // read() refused as corrupt is the source's own business), from any of the pipeline's threads,
  // possibly while read() runs. `frame` is valid only during the call. Files and cameras have
  // nothing to do; a Redis source acknowledges the entry (frame.origin) when the outcome is final.
  virtual void settle(const Frame& frame, FrameOutcome outcome) {}
  // Called once after the last settle(), before the source is destroyed: a source that batches
  // its acknowledgements sends what is left. Its error fails the run (the outputs are finalized).
  virtual Status close() { return ok(); }
  // Frames taken from the input ahead of read() and owned by this process (a Redis source's
  // fetched entries): on a stop request (Ctrl-C, SIGTERM) the reader goes on calling read() while
  // this is true, and read() then hands them out without taking more, so that they are finished
  // instead of left behind.
  virtual bool has_read_ahead() const { return false; }
  // After close(), for a source whose input keeps what it did not finish (a Redis consumer
  // group): how many entries this consumer left pending for another; nullopt for other sources.
  virtual std::optional<int64_t> left_pending() const { return std::nullopt; }
  // The network input's size, told once the model is loaded: a source that can decode at a
  // reduced scale (JPEG over the wire) decodes no more pixels than that needs.
  virtual void prefer_size(cv::Size network_input) {}
  // The run letterboxes on CUDA device `cuda_device` (--preprocess-on gpu): a source that decodes
  // there (NVDEC) may hand its frames over in the device's memory from now on (Frame::device,
  // PixelFormat::kDeviceNv12), and says so by returning true; false, with `why_not` (for the
  // profile), when its frames come to the host as before.
  virtual bool keep_frames_on_device(int cuda_device, std::string& why_not) {
    why_not = "not decoded on a GPU";
    return false;
  }
  // Frames the source took in and dropped itself, by the pipeline's drop reason names (a Redis
  // source: entries too old for --max-age, acknowledged unread), added to the profile at the end.
  virtual int64_t dropped_too_old() const { return 0; }
  // After the end: frames decoded from data cut off or corrupt in the source (processed, their
  // pictures possibly wrong), as damage() counts them; added to the profile's corrupt frames.
  virtual int64_t damaged_frames() const { return 0; }
  // How long the last read() waited for a frame to arrive at all (a Redis stream that was empty
  // for now), in ms: the profile counts it as waiting for input, not as the read stage's work.
  virtual double last_read_idle_ms() const { return 0; }
};

struct SourceOptions {
  int source_id = 0;
  // Where a video file's or stream's frames are decoded (--decode, sources/nvdec_packet_decoder.h):
  // on the CPU (libavcodec), by NVDEC, or auto (NVDEC for H.264/HEVC where present, else the CPU,
  // said once). The command line's default is auto; a program that does not ask decodes on the CPU.
  VideoDecode decode = VideoDecode::kCpu;
  // Threads of a video file's decoder (FFmpeg frame + slice threading); 0: as many as cores.
  // The pipeline passes the cores its inference leaves free (runtime/pipeline.cpp).
  int decode_threads = 0;
  // Frames older than this are not worth processing (--max-age; 0: off). A source that can tell
  // a frame's age before decoding it (Redis) drops such frames itself.
  double max_age_ms = 0;
  // Whether the run is stopping: a source that waits (a Redis stream that is empty for now) asks
  // this between waits, so that Ctrl-C or an error elsewhere never waits on it for long.
  std::function<bool()> should_stop;
  // Redis streams (sources/redis_source.h): the password when the URI has none (REDISCLI_AUTH),
  // and defaults for what the URI's query does not say.
  std::optional<std::string> redis_password;
  int64_t claim_after_ms = 30000;              // --claim-after
  uint64_t max_pixels = uint64_t{8192} * 8192;  // --max-pixels: larger frames are refused unread
  // Where the source's health is reported (the run's HealthBoard; null: nowhere). The reader
  // marks frames, the end and failure; a supervisor (sources/supervised_source.h) marks outages,
  // back-off and reconnects.
  SourceHealth* health = nullptr;
  // Live sources (streams, cameras, live GStreamer pipelines; sources/supervised_source.h):
  // reopened when they stall, break or end (--reconnect; false: the first outage ends the run),
  // for ever or until they have been down for reconnect_for_ms (--reconnect-for; 0: for ever).
  // A live source's read comes back with an error after stall_timeout_ms without a frame
  // (--stall-timeout), so that a dead stream never blocks the reader.
  bool reconnect = true;
  double stall_timeout_ms = 5000;
  double reconnect_for_ms = 0;
};

Result<std::unique_ptr<Source>> open_source(const std::string& spec, const SourceOptions& options = {});

// The files on disk that the source `spec` will read, as open_source() finds them: the file itself,
// every image of a folder, every file a glob matches; none for cameras, streams, pipelines,
// synthetic scenes and Redis. For the check that no output overwrites an input.
std::vector<std::string> files_read_by_source(const std::string& spec);

}  // namespace sd

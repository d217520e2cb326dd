#include "sources/gstreamer_source.h"

#include <cstdio>
#include <cstring>
#include <mutex>

#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "core/log.h"
#include "core/uri_redaction.h"

namespace sd {

namespace {

constexpr GstClockTime kStartTimeout = 2 * GST_SECOND;    // a pipeline that has not started by then never will
constexpr GstClockTime kPullSlice = 100 * GST_MSECOND;    // how long one wait for a sample lasts
constexpr double kDefaultStallMs = 10000;                 // without --stall-timeout: 10 s without a frame, the stream is gone
constexpr GstClockTime kErrorGrace = GST_SECOND;          // for the error message of a failed start

struct ObjectUnref {
  void operator()(gpointer p) const {
    if (p) gst_object_unref(p);
  }
};
struct SampleUnref {
  void operator()(GstSample* s) const { gst_sample_unref(s); }
};
struct MessageUnref {
  void operator()(GstMessage* m) const { gst_message_unref(m); }
};
struct CapsUnref {
  void operator()(GstCaps* c) const { gst_caps_unref(c); }
};
struct ErrorFree {
  void operator()(GError* e) const { g_error_free(e); }
};
using ElementPtr = std::unique_ptr<GstElement, ObjectUnref>;
using BusPtr = std::unique_ptr<GstBus, ObjectUnref>;
using SamplePtr = std::unique_ptr<GstSample, SampleUnref>;
using MessagePtr = std::unique_ptr<GstMessage, MessageUnref>;
using ErrorPtr = std::unique_ptr<GError, ErrorFree>;

void silent_glib_log(const gchar*, GLogLevelFlags, const gchar*, gpointer) {}

// GStreamer once per process; its own printing off unless --verbose (our one line says it all).
Status init_gstreamer() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    GError* raw = nullptr;
    if (!gst_init_check(nullptr, nullptr, &raw)) {
      ErrorPtr err(raw);
      failure = err ? err->message : "gst_init failed";
    }
  });
  if (!failure.empty()) return fail(ErrorCode::kSource, "GStreamer cannot start: " + failure);
  if (!log_verbose()) {
    gst_debug_set_default_threshold(GST_LEVEL_NONE);
    gst_debug_remove_log_function(gst_debug_log_default);
    g_log_set_default_handler(silent_glib_log, nullptr);
  }
  return ok();
}

// The first appsink of the pipeline (the frames we read), or null.
GstElement* find_appsink(GstElement* pipeline) {
  if (!GST_IS_BIN(pipeline)) {
    GstElementFactory* f = gst_element_get_factory(pipeline);
    return f && std::strcmp(GST_OBJECT_NAME(f), "appsink") == 0 ? GST_ELEMENT(gst_object_ref(pipeline)) : nullptr;
  }
  GstIterator* it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  GstElement* found = nullptr;
  while (!found && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    auto* e = GST_ELEMENT(g_value_get_object(&item));
    GstElementFactory* f = gst_element_get_factory(e);
    if (f && std::strcmp(GST_OBJECT_NAME(f), "appsink") == 0) found = GST_ELEMENT(gst_object_ref(e));
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
  return found;
}

// The text of an error message on the bus: GStreamer's message, one line.
std::string error_text(GstMessage* msg) {
  GError* raw = nullptr;
  gchar* debug = nullptr;
  gst_message_parse_error(msg, &raw, &debug);
  ErrorPtr err(raw);
  std::unique_ptr<gchar, decltype(&g_free)> debug_text(debug, &g_free);
  std::string text = err && err->message ? err->message : "unknown error";
  // "Internal data stream error" says nothing; the debug text carries the reason
  // ("streaming stopped, reason not-negotiated (-4)"), which does.
  if (debug) {
    const std::string details(debug);
    if (auto at = details.find("reason "); at != std::string::npos) {
      if (!text.empty() && text.back() == '.') text.pop_back();
      text += " (" + details.substr(at) + ")";
    }
  }
  if (GST_MESSAGE_SRC(msg)) text = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " + text;
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

}  // namespace

struct GstState {
  ElementPtr pipeline;
  ElementPtr appsink;
  BusPtr bus;
  ~GstState() {
    if (pipeline) gst_element_set_state(pipeline.get(), GST_STATE_NULL);
  }
  // An error on the bus (waiting up to `wait` for one), as our message; empty when none.
  std::string pending_error(GstClockTime wait = 0) {
    MessagePtr msg(gst_bus_timed_pop_filtered(bus.get(), wait, GST_MESSAGE_ERROR));
    return msg ? error_text(msg.get()) : std::string();
  }
};

GStreamerSource::GStreamerSource() : gst_(std::make_unique<GstState>()) {}
GStreamerSource::~GStreamerSource() = default;

Result<std::unique_ptr<Source>> GStreamerSource::open(const std::string& description, const SourceOptions& options) {
  SD_TRY(init_gstreamer());
  auto src = std::unique_ptr<GStreamerSource>(new GStreamerSource());
  src->source_id_ = options.source_id;
  src->should_stop_ = options.should_stop;
  src->stall_timeout_ms_ = options.stall_timeout_ms > 0 ? options.stall_timeout_ms : kDefaultStallMs;
  src->info_.uri = without_password(description);  // an rtspsrc location= may carry one
  src->info_.kind = SourceKind::kGStreamer;
  GstState& g = *src->gst_;
  auto cannot = [&](const std::string& why) {
    return fail(ErrorCode::kSource, "GStreamer pipeline '" + src->info_.uri + "': " + without_password(why));
  };

  GError* raw = nullptr;
  g.pipeline.reset(gst_parse_launch(description.c_str(), &raw));
  ErrorPtr parse_error(raw);
  if (parse_error) return cannot(parse_error->message);
  if (!g.pipeline) return cannot("does not parse");
  g.appsink.reset(find_appsink(g.pipeline.get()));
  if (!g.appsink) return cannot("has no appsink to read frames from");
  // Frames as packed BGR; the pipeline converts to it (videoconvert) or fails to negotiate.
  std::unique_ptr<GstCaps, CapsUnref> caps(gst_caps_from_string("video/x-raw,format=BGR"));
  gst_app_sink_set_caps(GST_APP_SINK(g.appsink.get()), caps.get());
  gst_app_sink_set_max_buffers(GST_APP_SINK(g.appsink.get()), 4);
  g.bus.reset(gst_element_get_bus(g.pipeline.get()));

  // Paused first, as gst-launch does: a pipeline that prerolls has its first frame (and its caps)
  // by then; a live source (camera, RTSP, is-live=true) cannot preroll and says so (NO_PREROLL):
  // its frames come at its own pace and may be dropped when the pipeline falls behind, while any
  // other pipeline is read like a file, frame by frame.
  auto start_failure = [&](GstStateChangeReturn r) {
    // The streaming thread that failed posts its error on its own time: give it a moment.
    std::string why = g.pending_error(r == GST_STATE_CHANGE_FAILURE ? kErrorGrace : 0);
    if (why.empty()) why = r == GST_STATE_CHANGE_ASYNC ? "did not start within 2 s" : "could not start";
    return cannot(why);
  };
  GstStateChangeReturn r = gst_element_set_state(g.pipeline.get(), GST_STATE_PAUSED);
  if (r == GST_STATE_CHANGE_ASYNC) r = gst_element_get_state(g.pipeline.get(), nullptr, nullptr, kStartTimeout);
  if (r == GST_STATE_CHANGE_FAILURE || r == GST_STATE_CHANGE_ASYNC) return start_failure(r);
  src->info_.live = r == GST_STATE_CHANGE_NO_PREROLL;
  r = gst_element_set_state(g.pipeline.get(), GST_STATE_PLAYING);
  if (r == GST_STATE_CHANGE_ASYNC) r = gst_element_get_state(g.pipeline.get(), nullptr, nullptr, kStartTimeout);
  if (r == GST_STATE_CHANGE_FAILURE || r == GST_STATE_CHANGE_ASYNC) return start_failure(r);
  // Size and rate as negotiated (known once prerolled; else from the first frame).
  if (GstPad* pad = gst_element_get_static_pad(g.appsink.get(), "sink")) {
    if (GstCaps* current = gst_pad_get_current_caps(pad)) {
      GstVideoInfo vi;
      if (gst_video_info_from_caps(&vi, current)) {
        src->info_.width = GST_VIDEO_INFO_WIDTH(&vi);
        src->info_.height = GST_VIDEO_INFO_HEIGHT(&vi);
        if (GST_VIDEO_INFO_FPS_D(&vi) > 0 && GST_VIDEO_INFO_FPS_N(&vi) > 0)
          src->info_.fps = static_cast<double>(GST_VIDEO_INFO_FPS_N(&vi)) / GST_VIDEO_INFO_FPS_D(&vi);
      }
      gst_caps_unref(current);
    }
    gst_object_unref(pad);
  }
  src->start_ = Clock::now();
  return std::unique_ptr<Source>(std::move(src));
}

Result<bool> GStreamerSource::read(Frame& frame) {
  GstState& g = *gst_;
  auto* sink = GST_APP_SINK(g.appsink.get());
  SamplePtr sample;
  const Clock::time_point began = Clock::now();
  while (!sample) {
    // Waiting in short slices: a stop request ends the wait, and so does the stall timeout.
    if (should_stop_ && should_stop_()) return false;
    if (std::string err = g.pending_error(); !err.empty())
      return fail(ErrorCode::kSource, "GStreamer pipeline '" + info_.uri + "': " + without_password(err));
    sample.reset(gst_app_sink_try_pull_sample(sink, kPullSlice));
    if (sample) break;
    if (gst_app_sink_is_eos(sink)) {
      if (next_index_ == 0) return fail(ErrorCode::kSource, "GStreamer pipeline '" + info_.uri + "' delivered no frame");
      return false;
    }
    const double waited_ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
    if (waited_ms >= stall_timeout_ms_) {
      char waited[32];
      std::snprintf(waited, sizeof waited, "%.1f s", stall_timeout_ms_ / 1000.0);
      return fail(ErrorCode::kSource, "GStreamer pipeline '" + info_.uri + "' delivered no frame for " + waited);
    }
  }
  GstVideoInfo vi;
  GstCaps* caps = gst_sample_get_caps(sample.get());
  GstBuffer* buffer = gst_sample_get_buffer(sample.get());
  if (!caps || !buffer || !gst_video_info_from_caps(&vi, caps) || GST_VIDEO_INFO_FORMAT(&vi) != GST_VIDEO_FORMAT_BGR)
    return fail(ErrorCode::kSource, "GStreamer pipeline '" + info_.uri + "' delivered a frame that is not BGR video");
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ))
    return fail(ErrorCode::kSource, "GStreamer pipeline '" + info_.uri + "': cannot read a frame's memory");
  const int w = GST_VIDEO_INFO_WIDTH(&vi), h = GST_VIDEO_INFO_HEIGHT(&vi);
  const size_t stride = static_cast<size_t>(GST_VIDEO_INFO_PLANE_STRIDE(&vi, 0));
  frame.set_bgr();
  frame.image.create(h, w, CV_8UC3);
  if (map.size >= stride * static_cast<size_t>(h - 1) + static_cast<size_t>(w) * 3) {
    for (int y = 0; y < h; ++y) std::memcpy(frame.image.ptr(y), map.data + stride * static_cast<size_t>(y), static_cast<size_t>(w) * 3);
  }
  const bool complete = map.size >= stride * static_cast<size_t>(h - 1) + static_cast<size_t>(w) * 3;
  gst_buffer_unmap(buffer, &map);
  if (!complete) return fail(ErrorCode::kSource, "GStreamer pipeline '" + info_.uri + "' delivered a truncated frame");
  if (info_.width == 0) {
    info_.width = w;
    info_.height = h;
  }
  frame.capture_time = Clock::now();
  frame.source_id = source_id_;
  frame.index = next_index_++;
  frame.timestamp_ms = std::chrono::duration<double, std::milli>(frame.capture_time - start_).count();
  return true;
}

}  // namespace sd

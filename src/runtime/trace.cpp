#include "runtime/trace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sinks/jsonl_sink.h"

namespace sd {

Status write_chrome_trace(const Profiler& profiler, const std::string& path, const std::string& shown_as) {
  const std::string& name = shown_as.empty() ? path : shown_as;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return fail(ErrorCode::kOutput, "cannot write trace to " + name + ": " + std::strerror(errno));
  const Clock::time_point origin = profiler.start_time();
  auto us = [&](Clock::time_point t) { return std::chrono::duration<double, std::micro>(t - origin).count(); };
  std::fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
  bool first = true;
  auto sep = [&] {
    if (!first) std::fputs(",\n", f);
    first = false;
  };
  auto recorders = profiler.recorders();
  bool truncated = false;
  for (size_t tid = 0; tid < recorders.size(); ++tid) {
    const StageRecorder& rec = *recorders[tid];
    sep();
    std::fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %zu, \"args\": {\"name\": %s}}", tid,
                 json_quote(rec.thread_name()).c_str());
    sep();
    std::fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": 1, \"tid\": %zu, \"args\": {\"sort_index\": %zu}}",
                 tid, tid);
    truncated |= rec.spans_truncated();
    for (const TraceSpan& s : rec.spans()) {
      sep();
      std::fprintf(f,
                   "{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"stage\", \"pid\": 1, \"tid\": %zu, \"ts\": %.3f, "
                   "\"dur\": %.3f, \"args\": {\"source\": %d, \"frame\": %lld, \"items\": %d}}",
                   stage_name(s.stage), tid, us(s.begin), us(s.end) - us(s.begin), s.source_id,
                   static_cast<long long>(s.frame), s.items);
    }
  }
  std::fputs("\n],\n", f);
  std::fprintf(f, "\"otherData\": {\"producer\": \"streamdet\", \"truncated\": %s}}\n", truncated ? "true" : "false");
  bool write_error = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || write_error) return fail(ErrorCode::kOutput, "writing trace " + name + " failed");
  return ok();
}

}  // namespace sd

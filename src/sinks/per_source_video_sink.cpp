#include "sinks/per_source_video_sink.h"

#include "sinks/output_paths.h"
#include "sinks/sink_factory.h"

namespace sd {

Result<std::unique_ptr<PerSourceVideoSink>> PerSourceVideoSink::open(const std::string& pattern,
                                                                     const std::vector<SinkSourceInfo>& sources) {
  auto sink = std::unique_ptr<PerSourceVideoSink>(new PerSourceVideoSink());
  sink->pattern_ = pattern;
  const int n = static_cast<int>(sources.size());
  if (pattern == "-" && n > 1)
    return fail(ErrorCode::kOutput, "cannot write video to standard output (-o -): " + std::to_string(n) +
                                        " sources cannot share it; name a file per source (-o 'out_{name}.mkv')");
  for (int s = 0; s < n; ++s) {
    const SinkSourceInfo& src = sources[static_cast<size_t>(s)];
    SD_ASSIGN_OR_RETURN(auto video, VideoSink::open(output_path_for_source(pattern, s, src.uri, n), src.fps, src.width, src.height));
    sink->videos_.push_back(std::move(video));
  }
  return sink;
}

Status PerSourceVideoSink::write(const FrameResult& result) {
  const auto s = static_cast<size_t>(result.frame.source_id);
  if (s >= videos_.size())
    return fail(ErrorCode::kInternal, "video " + pattern_ + ": a frame of source " + std::to_string(s) + ", which it has no file for");
  return videos_[s]->write(result);
}

Status PerSourceVideoSink::finish() {
  Status first = ok();
  for (auto& v : videos_) {
    Status st = v->finish();
    if (!st && first) first = st;
  }
  return first;
}

}  // namespace sd

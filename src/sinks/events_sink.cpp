#include "sinks/events_sink.h"

#include "sinks/jsonl_sink.h"

namespace sd {

Result<std::unique_ptr<EventsSink>> EventsSink::open(const std::string& path, const std::vector<std::string>& source_uris) {
  SD_ASSIGN_OR_RETURN(auto file, JsonLinesFile::open(path, "events"));
  auto sink = std::unique_ptr<EventsSink>(new EventsSink());
  sink->file_ = std::move(file);
  for (const auto& u : source_uris) sink->sources_json_.push_back(json_quote(u));
  return sink;
}

Status EventsSink::start() { return file_->start(); }

Status EventsSink::write(const FrameResult& result) {
  if (result.events.empty()) return ok();
  std::lock_guard<std::mutex> lock(mutex_);
  lines_.clear();
  for (const CountEvent& e : result.events) {
    const int sid = e.source_id;
    const std::string source = !result.frame.source_name.empty() ? json_quote(result.frame.source_name)
                               : sid >= 0 && static_cast<size_t>(sid) < sources_json_.size()
                                   ? sources_json_[static_cast<size_t>(sid)]
                                   : "\"" + std::to_string(sid) + "\"";
    lines_ += count_event_json(e, source);
    lines_ += '\n';
  }
  return file_->append(lines_);
}

Status EventsSink::finish() { return file_->finish(); }

}  // namespace sd

#include "sinks/sink_factory.h"

#include <algorithm>
#include <array>
#include <filesystem>

#include "sinks/events_sink.h"
#include "sinks/jsonl_sink.h"
#include "sinks/per_source_video_sink.h"
#include "sinks/redis_sink.h"
#include "sinks/video_sink.h"

namespace sd {
namespace {

bool has_extension(const std::string& path, std::initializer_list<const char*> exts) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::any_of(exts.begin(), exts.end(), [&](const char* e) { return ext == e; });
}

Result<std::unique_ptr<Sink>> open_video(const SinkTarget& t, const SinkContext& c) {
  SD_ASSIGN_OR_RETURN(auto sink, PerSourceVideoSink::open(t.target, c.sources));
  return std::unique_ptr<Sink>(std::move(sink));
}

Result<std::unique_ptr<Sink>> open_jsonl(const SinkTarget& t, const SinkContext& c) {
  std::vector<std::string> uris;
  for (const auto& s : c.sources) uris.push_back(s.uri);
  SD_ASSIGN_OR_RETURN(auto sink, JsonlSink::open(t.target, uris, c.class_names));
  return std::unique_ptr<Sink>(std::move(sink));
}

Result<std::unique_ptr<Sink>> open_events(const SinkTarget& t, const SinkContext& c) {
  std::vector<std::string> uris;
  for (const auto& s : c.sources) uris.push_back(s.uri);
  SD_ASSIGN_OR_RETURN(auto sink, EventsSink::open(t.target, uris));
  return std::unique_ptr<Sink>(std::move(sink));
}

std::vector<NamedFile> video_files(const SinkTarget& t, const std::vector<std::string>& uris) {
  std::vector<NamedFile> files;
  const int n = static_cast<int>(uris.size());
  // With several sources each file says whose it is: two that come out the same name both.
  for (int s = 0; s < n; ++s) {
    const std::string& uri = uris[static_cast<size_t>(s)];
    files.push_back({t.option, output_path_for_source(t.target, s, uri, n), n > 1 ? "for --source " + uri : ""});
  }
  return files;
}

std::vector<NamedFile> single_file(const SinkTarget& t, const std::vector<std::string>&) { return {{t.option, t.target}}; }

std::vector<NamedFile> no_file(const SinkTarget&, const std::vector<std::string>&) { return {}; }

struct SinkKindRow {
  const char* name;
  SinkTarget::Kind forced;                       // the option that always means this kind
  bool (*named_by)(const std::string& target);   // --sink: does the name say this kind?
  Result<std::unique_ptr<Sink>> (*open)(const SinkTarget&, const SinkContext&);
  std::vector<NamedFile> (*files)(const SinkTarget&, const std::vector<std::string>&);
};

const std::array kSinkKinds{
    SinkKindRow{"video", SinkTarget::Kind::kVideo, &VideoSink::is_video_path, &open_video, &video_files},
    SinkKindRow{"jsonl", SinkTarget::Kind::kJsonl,
                [](const std::string& t) { return has_extension(t, {".jsonl", ".ndjson"}); }, &open_jsonl, &single_file},
    // --events only (a .jsonl given to --sink is detections).
    SinkKindRow{"events", SinkTarget::Kind::kEvents, [](const std::string&) { return false; }, &open_events, &single_file},
    SinkKindRow{"redis", SinkTarget::Kind::kByName, &is_redis_sink_target,
                [](const SinkTarget& t, const SinkContext& c) { return open_redis_sink(t.target, c); }, &no_file},
};

Result<const SinkKindRow*> kind_of(const SinkTarget& t) {
  for (const auto& row : kSinkKinds)
    if ((t.kind != SinkTarget::Kind::kByName && t.kind == row.forced) ||
        (t.kind == SinkTarget::Kind::kByName && row.named_by(t.target)))
      return &row;
  return fail(ErrorCode::kUsage, t.option + " " + t.target + ": not a kind of output streamdet writes (a video file " +
                                     VideoSink::supported_extensions() + ", a .jsonl file, a redis:// URI)");
}

}  // namespace

Result<std::unique_ptr<Sink>> open_sink(const SinkTarget& target, const SinkContext& context) {
  SD_ASSIGN_OR_RETURN(const SinkKindRow* row, kind_of(target));
  return row->open(target, context);
}

std::vector<NamedFile> sink_files(const SinkTarget& target, const std::vector<std::string>& source_uris) {
  auto row = kind_of(target);
  return row ? (*row)->files(target, source_uris) : std::vector<NamedFile>{};
}

Status check_sink_targets(const std::vector<SinkTarget>& targets) {
  for (const auto& t : targets) SD_TRY(kind_of(t));
  return ok();
}

}  // namespace sd

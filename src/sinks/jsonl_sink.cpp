#include "sinks/jsonl_sink.h"

#include <charconv>
#include <cstdio>

namespace sd {

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

void append_fixed(std::string& out, double v, int precision) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  out.append(buf, res.ptr);
}

void append_int(std::string& out, long long v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace

Result<std::unique_ptr<JsonlSink>> JsonlSink::open(const std::string& path, const std::vector<std::string>& source_uris,
                                                   const std::vector<std::string>& class_names) {
  SD_ASSIGN_OR_RETURN(auto file, JsonLinesFile::open(path, "detections"));
  auto sink = std::unique_ptr<JsonlSink>(new JsonlSink());
  sink->file_ = std::move(file);
  for (const auto& u : source_uris) sink->sources_json_.push_back(json_quote(u));
  for (const auto& n : class_names) sink->names_json_.push_back(json_quote(n));
  return sink;
}

Status JsonlSink::start() { return file_->start(); }

void JsonlSink::format_line(const FrameResult& result, std::string& out) const {
  out.clear();
  out += "{\"source\": ";
  const int sid = result.frame.source_id;
  // A frame from the wire (Redis) is named as its producer named it.
  if (!result.frame.source_name.empty()) out += json_quote(result.frame.source_name);
  else if (sid >= 0 && static_cast<size_t>(sid) < sources_json_.size()) out += sources_json_[static_cast<size_t>(sid)];
  else out += "\"" + std::to_string(sid) + "\"";
  out += ", \"frame\": ";
  append_int(out, result.frame.index);
  out += ", \"timestamp_ms\": ";
  append_fixed(out, result.frame.timestamp_ms, 1);
  out += ", \"detections\": [";
  bool first = true;
  for (const Detection& d : result.detections) {
    if (!first) out += ", ";
    first = false;
    out += "{\"box\": [";
    append_fixed(out, d.x1, 1);
    out += ", ";
    append_fixed(out, d.y1, 1);
    out += ", ";
    append_fixed(out, d.x2, 1);
    out += ", ";
    append_fixed(out, d.y2, 1);
    out += "], \"class_id\": ";
    append_int(out, d.class_id);
    out += ", \"class_name\": ";
    if (d.class_id >= 0 && static_cast<size_t>(d.class_id) < names_json_.size())
      out += names_json_[static_cast<size_t>(d.class_id)];
    else
      out += "\"" + std::to_string(d.class_id) + "\"";
    out += ", \"confidence\": ";
    append_fixed(out, d.score, 4);
    if (d.track_id >= 0) {
      out += ", \"track_id\": ";
      out += std::to_string(d.track_id);
    }
    out += "}";
  }
  out += "]}";
}

Status JsonlSink::write(const FrameResult& result) {
  // The line is formatted under the lock: line_ is reused by every source's sink thread.
  std::lock_guard<std::mutex> lock(mutex_);
  format_line(result, line_);
  line_ += '\n';
  return file_->append(line_);
}

Status JsonlSink::finish() { return file_->finish(); }

}  // namespace sd

#include "sinks/jsonl_sink.h"

#include <cerrno>
#include <charconv>
#include <cstring>

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
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return fail(ErrorCode::kOutput, "cannot write detections to " + path + ": " + std::strerror(errno));
  auto sink = std::unique_ptr<JsonlSink>(new JsonlSink());
  sink->path_ = path;
  sink->file_ = f;
  for (const auto& u : source_uris) sink->sources_json_.push_back(json_quote(u));
  for (const auto& n : class_names) sink->names_json_.push_back(json_quote(n));
  return sink;
}

JsonlSink::~JsonlSink() {
  if (file_) std::fclose(file_);
}

void JsonlSink::format_line(const FrameResult& result, std::string& out) const {
  out.clear();
  out += "{\"source\": ";
  const int sid = result.frame.source_id;
  if (sid >= 0 && static_cast<size_t>(sid) < sources_json_.size()) out += sources_json_[static_cast<size_t>(sid)];
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
    out += "}";
  }
  out += "]}";
}

Status JsonlSink::write(const FrameResult& result) {
  if (!file_) return fail(ErrorCode::kOutput, "detections file " + path_ + " is already closed");
  format_line(result, line_);
  line_ += '\n';
  if (std::fwrite(line_.data(), 1, line_.size(), file_) != line_.size())
    return fail(ErrorCode::kOutput, "writing detections to " + path_ + " failed: " + std::strerror(errno));
  return ok();
}

Status JsonlSink::finish() {
  if (!file_) return ok();
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return fail(ErrorCode::kOutput, "closing detections file " + path_ + " failed: " + std::strerror(errno));
  return ok();
}

}  // namespace sd

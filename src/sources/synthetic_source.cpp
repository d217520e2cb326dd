#include "sources/synthetic_source.h"

#include <charconv>
#include <cmath>
#include <thread>

namespace sd {

bool is_synthetic_spec(const std::string& spec) { return spec.rfind("synth:", 0) == 0; }

Result<SyntheticSourceSpec> parse_synthetic_spec(const std::string& spec) {
  SyntheticSourceSpec out;
  std::string rest = spec.substr(6);
  auto bad = [&](const std::string& why) { return fail(ErrorCode::kUsage, "source " + spec + ": " + why); };
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? rest.size() : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return bad("expected key=value, got '" + item + "'");
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    double v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || p != value.data() + value.size()) return bad("'" + key + "' needs a number, got '" + value + "'");
    if (key == "w") out.scene.width = static_cast<int>(v);
    else if (key == "h") out.scene.height = static_cast<int>(v);
    else if (key == "frames") out.scene.frames = static_cast<int>(v);
    else if (key == "fps") out.scene.fps = v;
    else if (key == "seed") out.scene.seed = static_cast<uint64_t>(v);
    else if (key == "objects") out.scene.num_objects = static_cast<int>(v);
    else if (key == "live") out.live = v != 0;
    else return bad("unknown key '" + key + "' (known: w, h, frames, fps, seed, objects, live)");
  }
  if (out.scene.width < 16 || out.scene.height < 16 || out.scene.width > 8192 || out.scene.height > 8192)
    return bad("frame size must be within 16..8192");
  if (out.scene.frames < 0) return bad("frames must be >= 0");
  if (!(out.scene.fps > 0) || out.scene.fps > 10000) return bad("fps must be within (0, 10000]");
  if (out.scene.num_objects < 0 || out.scene.num_objects > 64) return bad("objects must be within 0..64");
  return out;
}

Result<std::unique_ptr<Source>> SyntheticSource::open(const std::string& spec, const SourceOptions& options) {
  SD_ASSIGN_OR_RETURN(SyntheticSourceSpec parsed, parse_synthetic_spec(spec));
  return std::unique_ptr<Source>(new SyntheticSource(parsed, spec, options.source_id));
}

SyntheticSource::SyntheticSource(const SyntheticSourceSpec& spec, const std::string& uri, int source_id)
    : spec_(spec), scene_(spec.scene), source_id_(source_id) {
  info_.uri = uri;
  info_.kind = spec.live ? SourceKind::kCamera : SourceKind::kVideoFile;
  info_.fps = spec.scene.fps;
  info_.width = spec.scene.width;
  info_.height = spec.scene.height;
  info_.frame_count = spec.live || spec.scene.frames == 0 ? -1 : spec.scene.frames;
  info_.live = spec.live;
}

Result<bool> SyntheticSource::read(Frame& frame) {
  const double period_ms = 1000.0 / spec_.scene.fps;
  int64_t index = next_index_;
  if (spec_.live) {
    // A camera's clock: frame k exists from start + k * period. Wait for the next one; if the
    // reader was slow, the frames that went by in the meantime are gone.
    auto now = Clock::now();
    if (next_index_ == 0) start_ = now;
    double elapsed_ms = std::chrono::duration<double, std::milli>(now - start_).count();
    int64_t newest = static_cast<int64_t>(std::floor(elapsed_ms / period_ms));
    if (newest > index) index = newest;
    auto due = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(index * period_ms));
    if (due > now) std::this_thread::sleep_until(due);
  }
  if (spec_.scene.frames > 0 && index >= spec_.scene.frames) return false;
  frame.set_bgr();
  scene_.render(static_cast<int>(index), frame.image, truth_);
  frame.source_id = source_id_;
  frame.index = index;
  frame.timestamp_ms = static_cast<double>(index) * period_ms;
  frame.capture_time = Clock::now();
  next_index_ = index + 1;
  return true;
}

}  // namespace sd

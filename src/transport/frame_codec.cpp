#include "transport/frame_codec.h"

#include <turbojpeg.h>

#include <algorithm>

#include "transport/jpeg_encoder.h"
#include "transport/messages.pb.h"

namespace sd::transport {
namespace {

ParsedFrame refuse(BadFrame kind, std::string why) {
  ParsedFrame p;
  p.bad = kind;
  p.why = std::move(why);
  return p;
}

std::string size_text(int64_t w, int64_t h) { return std::to_string(w) + "x" + std::to_string(h); }

// Well-formed UTF-8, as protobuf checks a string field: no overlong forms, surrogates or code
// points past U+10FFFF.
bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f)) return false;
    i += n;
  }
  return true;
}

// Where `view` lies within `bytes`: its offset, or npos when it views something else.
size_t offset_in(std::string_view view, const std::string& bytes) {
  const auto v = reinterpret_cast<uintptr_t>(view.data()), b = reinterpret_cast<uintptr_t>(bytes.data());
  return view.data() && v >= b && v + view.size() <= b + bytes.size() ? v - b : std::string::npos;
}

}  // namespace

ParsedFrame::ParsedFrame(const ParsedFrame& other) { *this = other; }

ParsedFrame::ParsedFrame(ParsedFrame&& other) noexcept { *this = std::move(other); }

ParsedFrame& ParsedFrame::operator=(const ParsedFrame& other) {
  if (this == &other) return *this;
  const size_t at = offset_in(other.header.data, other.storage);
  header = other.header;
  bad = other.bad;
  why = other.why;
  storage = other.storage;
  if (at != std::string::npos) header.data = std::string_view(storage).substr(at, other.header.data.size());
  return *this;
}

ParsedFrame& ParsedFrame::operator=(ParsedFrame&& other) noexcept {
  if (this == &other) return *this;
  const size_t at = offset_in(other.header.data, other.storage), size = other.header.data.size();
  header = std::move(other.header);
  bad = other.bad;
  why = std::move(other.why);
  storage = std::move(other.storage);
  if (at != std::string::npos) {
    header.data = std::string_view(storage).substr(at, size);
    other.header.data = {};  // no view into bytes the moved-from frame no longer holds
  }
  return *this;
}

const char* bad_frame_name(BadFrame kind) {
  switch (kind) {
    case BadFrame::kNone: return "none";
    case BadFrame::kMalformed: return "malformed";
    case BadFrame::kMissingField: return "missing-field";
    case BadFrame::kTooLarge: return "too-large";
    case BadFrame::kCorruptImage: return "corrupt-image";
    case BadFrame::kSizeMismatch: return "size-mismatch";
  }
  return "?";
}

ParsedFrame parse_frame_message(std::string_view bytes, uint64_t max_pixels) {
  streamdet::wire::Frame msg;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return refuse(BadFrame::kMalformed, "not a frame message (" + std::to_string(bytes.size()) + " bytes that do not parse)");
  if (!is_utf8(msg.source_id())) return refuse(BadFrame::kMalformed, "the frame's source id is not UTF-8");
  if (msg.width() == 0 || msg.height() == 0) return refuse(BadFrame::kMissingField, "the frame has no width or height");
  if (msg.encoding() != streamdet::wire::Frame::JPEG && msg.encoding() != streamdet::wire::Frame::RAW_BGR)
    return refuse(BadFrame::kMissingField, "the frame's encoding is missing or unknown (" + std::to_string(msg.encoding()) + ")");
  if (msg.data().empty()) return refuse(BadFrame::kMissingField, "the frame has no image data");
  const uint64_t pixels = uint64_t{msg.width()} * msg.height();
  if (pixels > max_pixels || msg.width() > 65535 || msg.height() > 65535)
    return refuse(BadFrame::kTooLarge, "a " + size_text(msg.width(), msg.height()) + " frame is over --max-pixels " + std::to_string(max_pixels));
  const bool jpeg = msg.encoding() == streamdet::wire::Frame::JPEG;
  if (!jpeg && msg.data().size() != pixels * 3)
    return refuse(BadFrame::kSizeMismatch, "a raw " + size_text(msg.width(), msg.height()) + " BGR frame needs " + std::to_string(pixels * 3) +
                                               " bytes, the message holds " + std::to_string(msg.data().size()));
  ParsedFrame p;
  p.storage = std::move(*msg.mutable_data());
  FrameHeader& h = p.header;
  h.source_id = msg.source_id();
  h.frame_index = msg.frame_index();
  h.capture_time_us = msg.capture_time_us();
  h.width = static_cast<int>(msg.width());
  h.height = static_cast<int>(msg.height());
  h.jpeg = jpeg;
  h.data = p.storage;
  return p;
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {}

JpegDecoder::~JpegDecoder() {
  if (handle_) tjDestroy(static_cast<tjhandle>(handle_));
}

cv::Size JpegDecoder::scaled_size(int width, int height, int min_width, int min_height) const {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  cv::Size best(width, height);
  if (min_width <= 0 && min_height <= 0) return best;
  for (int i = 0; factors && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    // 1/2, 1/4 and 1/8 have libjpeg-turbo's SIMD inverse DCTs; the other M/8 factors do not.
    if (f.num != 1 || (f.denom != 2 && f.denom != 4 && f.denom != 8)) continue;
    const int w = TJSCALED(width, f), h = TJSCALED(height, f);
    if (w >= min_width && h >= min_height && static_cast<int64_t>(w) * h < static_cast<int64_t>(best.width) * best.height) best = {w, h};
  }
  return best;
}

void JpegDecoder::replace_handle() {
  if (handle_) tjDestroy(static_cast<tjhandle>(handle_));
  handle_ = tjInitDecompress();
}

Status JpegDecoder::decode(std::string_view jpeg, cv::Size expected, int min_width, int min_height, cv::Mat& out) {
  if (!handle_) replace_handle();
  auto* h = static_cast<tjhandle>(handle_);
  if (!h) return fail(ErrorCode::kInternal, "libjpeg-turbo: no decompressor");
  const auto* buf = reinterpret_cast<const unsigned char*>(jpeg.data());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, buf, static_cast<unsigned long>(jpeg.size()), &width, &height, &subsamp, &colorspace) != 0) {
    auto refused = fail(ErrorCode::kSource, std::string("not a JPEG image: ") + tjGetErrorStr2(h));
    // libjpeg-turbo 2.1's tjDecompressHeader3 does not reset the handle after an error: the next
    // header read would go on from the state this one failed in, and fail, for every later frame.
    replace_handle();
    return refused;
  }
  if (expected.width > 0 && (width != expected.width || height != expected.height))
    return fail(ErrorCode::kSource, "size mismatch: the JPEG is " + size_text(width, height) + ", the message says " +
                                        size_text(expected.width, expected.height));
  const cv::Size size = scaled_size(width, height, min_width, min_height);
  out.create(size.height, size.width, CV_8UC3);  // reuses the buffer when the size is unchanged
  if (tjDecompress2(h, buf, static_cast<unsigned long>(jpeg.size()), out.data, size.width, static_cast<int>(out.step), size.height,
                    TJPF_BGR, 0) != 0) {
    // A warning (a truncated scan, extraneous bytes) still leaves a whole image; an error does not.
    if (tjGetErrorCode(h) == TJERR_FATAL) return fail(ErrorCode::kSource, std::string("corrupt JPEG: ") + tjGetErrorStr2(h));
    return fail(ErrorCode::kSource, std::string("damaged JPEG: ") + tjGetErrorStr2(h));
  }
  return ok();
}

Result<std::string> encode_frame_message(const cv::Mat& bgr, const std::string& source_id, int64_t frame_index,
                                         int64_t capture_time_us, int quality) {
  if (bgr.type() != CV_8UC3 || bgr.empty()) return fail(ErrorCode::kInternal, "encode_frame_message: a BGR 8-bit frame is needed");
  streamdet::wire::Frame msg;
  msg.set_source_id(source_id);
  msg.set_frame_index(frame_index);
  msg.set_capture_time_us(capture_time_us);
  msg.set_width(static_cast<uint32_t>(bgr.cols));
  msg.set_height(static_cast<uint32_t>(bgr.rows));
  if (quality <= 0) {
    msg.set_encoding(streamdet::wire::Frame::RAW_BGR);
    std::string* data = msg.mutable_data();
    data->resize(static_cast<size_t>(bgr.cols) * bgr.rows * 3);
    for (int r = 0; r < bgr.rows; ++r)
      std::copy_n(bgr.ptr<unsigned char>(r), static_cast<size_t>(bgr.cols) * 3, data->data() + static_cast<size_t>(r) * bgr.cols * 3);
  } else {
    // One encoder per thread: its handle and buffer serve every frame `publish` sends.
    thread_local JpegEncoder encoder;
    SD_ASSIGN_OR_RETURN(std::string jpeg, encoder.encode(bgr, std::clamp(quality, 1, 100), /*fast_dct=*/false));
    msg.set_encoding(streamdet::wire::Frame::JPEG);
    msg.set_data(std::move(jpeg));
  }
  return msg.SerializeAsString();
}

}  // namespace sd::transport

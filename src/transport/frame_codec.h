// Frames on the wire (messages.proto): parsing a frame message with every check a hostile or
// broken producer calls for, before anything is allocated for the image; decoding its JPEG with
// libjpeg-turbo into a reused buffer, at a reduced DCT scale when the model needs fewer pixels
// than the frame has; and the producer's side, encoding a frame.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "core/error.h"

namespace sd::transport {

// Why an entry was refused, for the dead-letter stream and the counts (one log line per kind).
enum class BadFrame { kNone, kMalformed, kMissingField, kTooLarge, kCorruptImage, kSizeMismatch };
const char* bad_frame_name(BadFrame kind);  // "malformed", "missing-field", ...

struct FrameHeader {
  std::string source_id;
  int64_t frame_index = 0;
  int64_t capture_time_us = 0;
  int width = 0, height = 0;
  bool jpeg = false;            // else raw BGR
  std::string_view data;        // into the message's bytes (kept by ParsedFrame)
};

// A frame message parsed and checked: fields present, dimensions within max_pixels, raw data of
// exactly width * height * 3 bytes, a JPEG's own header agreeing with width and height.
struct ParsedFrame {
  FrameHeader header;
  BadFrame bad = BadFrame::kNone;
  std::string why;              // one line, when bad
  std::string storage;          // the message's image bytes

  ParsedFrame() = default;
  // A copy, or the frame moved to, has header.data view its own storage (a copy's bytes are its
  // own; a move keeps short bytes inside the string object, not on the heap).
  ParsedFrame(const ParsedFrame& other);
  ParsedFrame(ParsedFrame&& other) noexcept;
  ParsedFrame& operator=(const ParsedFrame& other);
  ParsedFrame& operator=(ParsedFrame&& other) noexcept;
};
ParsedFrame parse_frame_message(std::string_view bytes, uint64_t max_pixels);

// Decodes JPEG frames into BGR. Reuses its handle and output buffer: no allocation per frame once
// the largest frame has been seen (a new handle after a JPEG whose header does not read, as
// libjpeg-turbo leaves that one unusable).
class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // The smallest of the DCT scales 1, 1/2, 1/4, 1/8 (libjpeg-turbo's fast ones) that still gives
  // at least min_width x min_height (both 0: full size), and the size it gives (rounded up).
  cv::Size scaled_size(int width, int height, int min_width, int min_height) const;
  // Decodes into `out` (resized as needed; its buffer reused) at that scale. A JPEG whose own
  // header disagrees with `expected` (the message's width and height; 0x0: unchecked) is refused
  // before anything is decoded: its size is what max_pixels was checked against. Errors: kSource
  // naming the reason (libjpeg-turbo's, or both sizes).
  Status decode(std::string_view jpeg, cv::Size expected, int min_width, int min_height, cv::Mat& out);

 private:
  void replace_handle();
  void* handle_;
};

// The producer's side: a BGR frame as a Frame message, JPEG at `quality` (1..100) or raw
// (quality 0).
Result<std::string> encode_frame_message(const cv::Mat& bgr, const std::string& source_id, int64_t frame_index,
                                         int64_t capture_time_us, int quality);

}  // namespace sd::transport

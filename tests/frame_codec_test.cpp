// Frames on the wire (transport/frame_codec.h): a frame published as JPEG or raw BGR comes back
// as it went (JPEG within its quality), a JPEG is decoded at the smallest DCT scale that still
// covers what the model needs, and every kind of bad entry is refused with its kind and one line,
// before an image buffer is sized from what a message claims.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "transport/frame_codec.h"
#include "transport/messages.pb.h"

namespace sd::transport {
namespace {

cv::Mat test_picture(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / w), static_cast<uchar>(y * 255 / h), 128);
  cv::circle(m, {w / 2, h / 2}, std::min(w, h) / 4, cv::Scalar(20, 200, 40), -1);
  return m;
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat d;
  cv::absdiff(a, b, d);
  const cv::Scalar s = cv::mean(d);
  return (s[0] + s[1] + s[2]) / 3;
}

constexpr uint64_t kMaxPixels = 4096ull * 4096;

TEST(FrameCodec, RawAndJpegFramesComeBackAsTheyWent) {
  const cv::Mat pic = test_picture(320, 180);
  auto raw = encode_frame_message(pic, "cam1", 42, 1700000000123456, 0);
  ASSERT_TRUE(raw);
  ParsedFrame p = parse_frame_message(*raw, kMaxPixels);
  ASSERT_EQ(p.bad, BadFrame::kNone) << p.why;
  EXPECT_EQ(p.header.source_id, "cam1");
  EXPECT_EQ(p.header.frame_index, 42);
  EXPECT_EQ(p.header.capture_time_us, 1700000000123456);
  EXPECT_FALSE(p.header.jpeg);
  ASSERT_EQ(p.header.data.size(), 320u * 180 * 3);
  EXPECT_EQ(mean_abs_diff(cv::Mat(180, 320, CV_8UC3, const_cast<char*>(p.header.data.data())), pic), 0.0);

  auto jpeg = encode_frame_message(pic, "cam1", 43, 0, 90);
  ASSERT_TRUE(jpeg);
  EXPECT_LT(jpeg->size(), raw->size() / 4);
  ParsedFrame q = parse_frame_message(*jpeg, kMaxPixels);
  ASSERT_EQ(q.bad, BadFrame::kNone) << q.why;
  EXPECT_TRUE(q.header.jpeg);
  JpegDecoder dec;
  cv::Mat out;
  ASSERT_TRUE(dec.decode(q.header.data, {320, 180}, 0, 0, out));
  EXPECT_EQ(out.size(), cv::Size(320, 180));
  EXPECT_LT(mean_abs_diff(out, pic), 3.0);
}

TEST(FrameCodec, AJpegIsDecodedAtTheSmallestScaleThatCoversTheModelInput) {
  JpegDecoder dec;
  // 1280x720 into a 640-wide input: half size is enough; into 320: a quarter; 1000 wide: full.
  EXPECT_EQ(dec.scaled_size(1280, 720, 640, 360), cv::Size(640, 360));
  EXPECT_EQ(dec.scaled_size(1280, 720, 320, 0), cv::Size(320, 180));
  EXPECT_EQ(dec.scaled_size(1280, 720, 1000, 0), cv::Size(1280, 720));
  EXPECT_EQ(dec.scaled_size(1280, 720, 0, 0), cv::Size(1280, 720));  // no model size given: full size
  EXPECT_EQ(dec.scaled_size(1280, 720, 100, 50), cv::Size(160, 90));
  EXPECT_EQ(dec.scaled_size(1281, 721, 641, 0), cv::Size(641, 361));    // scaled sizes round up
  EXPECT_EQ(dec.scaled_size(1281, 721, 642, 0), cv::Size(1281, 721));
  const cv::Mat pic = test_picture(1280, 720);
  auto jpeg = encode_frame_message(pic, "c", 0, 0, 90);
  ASSERT_TRUE(jpeg);
  ParsedFrame p = parse_frame_message(*jpeg, kMaxPixels);
  cv::Mat out, reference;
  ASSERT_TRUE(dec.decode(p.header.data, {1280, 720}, 640, 360, out));
  ASSERT_EQ(out.size(), cv::Size(640, 360));
  cv::resize(pic, reference, {640, 360}, 0, 0, cv::INTER_AREA);
  EXPECT_LT(mean_abs_diff(out, reference), 3.0);
  // The buffer is reused for the next frame of the same size.
  const uchar* buffer = out.data;
  ASSERT_TRUE(dec.decode(p.header.data, {1280, 720}, 640, 360, out));
  EXPECT_EQ(out.data, buffer);
}

TEST(FrameCodec, EveryKindOfBadEntryIsRefusedWithItsKind) {
  const cv::Mat pic = test_picture(64, 48);
  streamdet::wire::Frame good;
  good.set_source_id("c");
  good.set_width(64);
  good.set_height(48);
  good.set_encoding(streamdet::wire::Frame::RAW_BGR);
  good.set_data(std::string(64 * 48 * 3, '\x10'));
  ASSERT_EQ(parse_frame_message(good.SerializeAsString(), kMaxPixels).bad, BadFrame::kNone);

  auto with = [&](auto change) {
    streamdet::wire::Frame f = good;
    change(f);
    return parse_frame_message(f.SerializeAsString(), kMaxPixels);
  };
  struct Case {
    const char* what;
    ParsedFrame got;
    BadFrame want;
  };
  const Case cases[] = {
      {"garbage", parse_frame_message(std::string("\xff\xff\xff\xff not protobuf"), kMaxPixels), BadFrame::kMalformed},
      {"source id not UTF-8", with([](auto& f) { f.set_source_id("cam\xc3\x28"); }), BadFrame::kMalformed},
      {"no width", with([](auto& f) { f.set_width(0); }), BadFrame::kMissingField},
      {"no encoding", with([](auto& f) { f.set_encoding(streamdet::wire::Frame::ENCODING_UNSPECIFIED); }), BadFrame::kMissingField},
      {"no data", with([](auto& f) { f.clear_data(); }), BadFrame::kMissingField},
      {"huge", with([](auto& f) { f.set_width(100000), f.set_height(100000); }), BadFrame::kTooLarge},
      {"short raw", with([](auto& f) { f.mutable_data()->resize(100); }), BadFrame::kSizeMismatch},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.got.bad, c.want) << c.what << ": " << c.got.why;
    EXPECT_FALSE(c.got.why.empty()) << c.what;
    EXPECT_EQ(c.got.why.find('\n'), std::string::npos) << c.what;
  }
  EXPECT_NE(cases[5].got.why.find("100000x100000"), std::string::npos) << cases[5].got.why;
  EXPECT_STREQ(bad_frame_name(BadFrame::kCorruptImage), "corrupt-image");
}

TEST(FrameCodec, CorruptTruncatedAndLyingJpegsAreRefusedBeforeDecoding) {
  const cv::Mat pic = test_picture(320, 240);
  auto msg = encode_frame_message(pic, "c", 0, 0, 85);
  ASSERT_TRUE(msg);
  ParsedFrame p = parse_frame_message(*msg, kMaxPixels);
  const std::string jpeg(p.header.data);
  JpegDecoder dec;
  cv::Mat out;
  // Not a JPEG at all.
  auto st = dec.decode("not a jpeg at all", {320, 240}, 0, 0, out);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("not a JPEG"), std::string::npos) << st.error().message;
  // Cut in half: refused or decoded with a warning, never a crash; the header is still read.
  st = dec.decode(std::string_view(jpeg).substr(0, jpeg.size() / 2), {320, 240}, 0, 0, out);
  if (!st) EXPECT_NE(st.error().message.find("JPEG"), std::string::npos) << st.error().message;
  // A message that says 32x24 around a 320x240 JPEG: the size max_pixels was checked against is a
  // lie; refused before decoding.
  st = dec.decode(jpeg, {32, 24}, 0, 0, out);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("size mismatch: the JPEG is 320x240, the message says 32x24"), std::string::npos)
      << st.error().message;
  // Every byte flipped in turn at a few places: errors only, no crash.
  for (size_t at : {size_t{2}, size_t{20}, size_t{200}, jpeg.size() / 2, jpeg.size() - 3}) {
    std::string broken = jpeg;
    broken[at] = static_cast<char>(broken[at] ^ 0x5a);
    (void)dec.decode(broken, {}, 0, 0, out);
  }
}

// Seen with the fuzz target: a source id that was not UTF-8 was refused by protobuf itself (the
// field was a proto3 string), which also logged a line of its own for every such frame, a log
// that a producer could flood. The id is bytes on the wire now, checked by the codec: the same
// refusal, and nothing logged. Well-formed UTF-8 of every length passes.
TEST(FrameCodec, ASourceIdThatIsNotUtf8IsRefusedWithoutALogLine) {
  streamdet::wire::Frame f;
  f.set_width(2);
  f.set_height(1);
  f.set_encoding(streamdet::wire::Frame::RAW_BGR);
  f.set_data(std::string(6, '\x10'));
  for (const std::string id : {"cam\xc3\x28", "\xff", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    f.set_source_id(id);
    testing::internal::CaptureStderr();
    const ParsedFrame p = parse_frame_message(f.SerializeAsString(), kMaxPixels);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(p.bad, BadFrame::kMalformed) << p.why;
    EXPECT_EQ(p.why, "the frame's source id is not UTF-8");
  }
  for (const std::string id : {"", "cam-1", "caméra", "\xe2\x82\xac", "\xf0\x9f\x93\xb7", "\xf4\x8f\xbf\xbf"}) {
    f.set_source_id(id);
    const ParsedFrame p = parse_frame_message(f.SerializeAsString(), kMaxPixels);
    EXPECT_EQ(p.bad, BadFrame::kNone) << p.why;
    EXPECT_EQ(p.header.source_id, id);
  }
}

// Found with the fuzz target (fuzz/fuzz_frame_message.cpp, which moves and copies frames as a
// pipeline does): header.data still viewed the storage of the frame it was copied from (always)
// or moved from (bytes short enough to live inside the string object: a 2x2 raw frame), a
// use after free once that frame was gone. tests/data/fuzz_frames/raw_bgr_2x2.bin is the short one.
TEST(FrameCodec, ACopiedOrMovedFrameViewsItsOwnBytes) {
  for (int w : {2, 64}) {
    auto msg = encode_frame_message(test_picture(w, 2), "c", 0, 0, 0);
    ASSERT_TRUE(msg);
    std::vector<ParsedFrame> frames;
    frames.push_back(parse_frame_message(*msg, kMaxPixels));  // moved from the returned frame
    ASSERT_EQ(frames[0].bad, BadFrame::kNone) << frames[0].why;
    frames.push_back(frames[0]);  // a copy; the vector grows and moves the first
    ParsedFrame assigned;
    assigned = frames[1];
    ParsedFrame moved_into;
    moved_into = std::move(frames[0]);
    EXPECT_TRUE(frames[0].header.data.empty()) << "a moved-from frame views nothing";
    for (const ParsedFrame* f : {&frames[1], &assigned, &moved_into}) {
      EXPECT_EQ(static_cast<const void*>(f->header.data.data()), static_cast<const void*>(f->storage.data())) << w;
      EXPECT_EQ(f->header.data.size(), size_t(w) * 2 * 3);
      EXPECT_EQ(f->header.data, std::string_view(msg->data(), msg->size()).substr(msg->size() - size_t(w) * 2 * 3)) << w;
    }
  }
  ParsedFrame refused = parse_frame_message("not a frame", kMaxPixels);
  ParsedFrame copy = refused;
  EXPECT_EQ(copy.bad, BadFrame::kMalformed);
  EXPECT_TRUE(copy.header.data.empty());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Found by the fuzz target (tests/data/fuzz_frames/found_jpeg_unreadable_header.bin, an 8-byte
// JPEG whose second marker has a bogus length): after a header libjpeg-turbo could not read, the
// decoder's reused handle refused every later JPEG, good ones included ("Bogus marker length"):
// one bad frame stopped a worker decoding for good. Every kind of refusal leaves it working.
TEST(FrameCodec, ABadJpegDoesNotSpoilTheDecoderForTheFramesAfterIt) {
  const cv::Mat pic = test_picture(64, 48);
  auto msg = encode_frame_message(pic, "c", 0, 0, 95);
  ASSERT_TRUE(msg);
  const ParsedFrame good = parse_frame_message(*msg, kMaxPixels);
  const std::string jpeg(good.header.data);
  const ParsedFrame found =
      parse_frame_message(read_file(std::filesystem::path(STREAMDET_SOURCE_DIR) / "tests/data/fuzz_frames/found_jpeg_unreadable_header.bin"),
                          kMaxPixels);
  ASSERT_EQ(found.bad, BadFrame::kNone) << found.why;
  std::string flipped = jpeg;
  for (size_t at = jpeg.size() / 2; at < jpeg.size() - 2; at += 7) flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
  const std::pair<const char*, std::string> bad[] = {
      {"the fuzzer's finding", std::string(found.header.data)},
      {"not a JPEG", "not a jpeg at all"},
      {"cut in its header", jpeg.substr(0, 100)},
      {"cut in its scan", jpeg.substr(0, jpeg.size() / 2)},
      {"a damaged scan", flipped},
  };
  JpegDecoder dec;
  cv::Mat out;
  for (const auto& [what, bytes] : bad) {
    (void)dec.decode(bytes, {}, 0, 0, out);
    auto st = dec.decode(jpeg, {64, 48}, 0, 0, out);
    ASSERT_TRUE(st) << "after " << what << ": " << st.error().message;
    EXPECT_LT(mean_abs_diff(out, pic), 3.0) << what;
    ASSERT_TRUE(dec.decode(jpeg, {64, 48}, 32, 24, out)) << what;
    EXPECT_EQ(out.size(), cv::Size(32, 24));
  }
  // A size that disagrees with the message is refused after a header that did read.
  ASSERT_FALSE(dec.decode(jpeg, {32, 24}, 0, 0, out));
  EXPECT_TRUE(dec.decode(jpeg, {64, 48}, 0, 0, out));
}

// Every input committed for the frame fuzz target (tests/data/fuzz_frames/: its seeds and what it
// found) is replayed as the target runs it: parsed, and a JPEG decoded at full size and at a
// reduced scale. Any refusal is fine; a crash is not, and what parses keeps the codec's promises.
TEST(FrameCodec, FuzzerFindingsStayFixed) {
  const std::filesystem::path dir = std::filesystem::path(STREAMDET_SOURCE_DIR) / "tests" / "data" / "fuzz_frames";
  JpegDecoder dec;
  cv::Mat out;
  int cases = 0, decoded = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string bytes = read_file(e.path());
    ++cases;
    const ParsedFrame p = parse_frame_message(bytes, 1024 * 1024);  // the fuzz target's max_pixels
    if (p.bad != BadFrame::kNone) {
      EXPECT_FALSE(p.why.empty()) << e.path();
      continue;
    }
    const FrameHeader& h = p.header;
    if (!h.jpeg) {
      EXPECT_EQ(h.data.size(), size_t(h.width) * h.height * 3) << e.path();
      continue;
    }
    for (int shift : {0, 1, 2, 3}) {
      const int min_w = shift ? (h.width + (1 << shift) - 1) >> shift : 0, min_h = shift ? (h.height + (1 << shift) - 1) >> shift : 0;
      auto st = dec.decode(h.data, {h.width, h.height}, min_w, min_h, out);
      if (!st) {
        EXPECT_NE(st.error().message.find("JPEG"), std::string::npos) << e.path() << ": " << st.error().message;
        continue;
      }
      EXPECT_EQ(out.size(), dec.scaled_size(h.width, h.height, min_w, min_h)) << e.path();
      ++decoded;
    }
  }
  EXPECT_GT(cases, 0);
  EXPECT_GT(decoded, 0);
}

}  // namespace
}  // namespace sd::transport

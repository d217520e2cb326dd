// libFuzzer target: any bytes as a frame message off the wire (transport/frame_codec.h), handled
// as the pipeline handles one: parsed and checked, moved and copied, and when it is a JPEG
// decoded by the one reused decoder, at full size and at a reduced DCT scale (1/2, 1/4 or 1/8,
// picked by the message's frame_index so that the fuzzer reaches each). A refusal is fine;
// crashes, leaks, UB, sanitizer reports and broken promises of the codec (checked below,
// __builtin_trap) are the findings: each one becomes a test in tests/frame_codec_test.cpp and its
// input goes into tests/data/fuzz_frames/.
//
// libjpeg-turbo is Debian's, not instrumented: the fuzzer sees no coverage inside it. So what
// libjpeg-turbo made of a JPEG (its kind of JPEG, each decode's error or warning) counts as
// coverage here, so that an input reaching a new outcome is kept and mutated further. And byte
// mutations of a whole message mostly break the message (9 in 10 here) or the JPEG's tables,
// so half the mutations are made inside a message that parses (LLVMFuzzerCustomMutator, below):
// the JPEG's bytes, most often its scan, or one field, and the message written again; the other
// half mutate the bytes as they are, for the protobuf parser and the checks. Over a million
// inputs, that doubles the JPEGs whose header reads and the outcomes reached.
#include <turbojpeg.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "transport/frame_codec.h"
#include "transport/messages.pb.h"

using namespace sd::transport;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// Small enough that a legitimate frame cannot make the run slow or large (4 MB for a raw frame,
// a few ms to decode), large enough for every code path.
constexpr uint64_t kMaxPixels = 1024 * 1024;

void check(bool promise) {
  if (!promise) __builtin_trap();
}

// libFuzzer reads this section as further coverage counters, cleared before each input.
__attribute__((section("__libfuzzer_extra_counters"))) uint8_t outcome_counters[4096];

// An outcome of libjpeg-turbo's, as one of those counters: the numbers in its messages left out
// ("Corrupt JPEG data: 35 extraneous bytes"), or every count would be new.
void count_outcome(unsigned kind, std::string_view message = {}) {
  uint32_t h = 2166136261u ^ kind;
  for (char c : message)
    if (c < '0' || c > '9') h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  outcome_counters[h % sizeof outcome_counters] = 1;
}

void count_outcome(unsigned kind, const sd::Status& st) { count_outcome(kind, st ? std::string_view("ok") : st.error().message); }

// The kind of JPEG its header gives (subsampling, colour space), or -1 when it does not read: with
// a handle of its own, new each time (libjpeg-turbo 2.1 leaves a handle unusable after a header
// it could not read).
int jpeg_kind(std::string_view jpeg) {
  tjhandle t = tjInitDecompress();
  int w = 0, h = 0, subsamp = -1, colorspace = -1;
  const bool read = t && tjDecompressHeader3(t, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), &w, &h, &subsamp,
                                             &colorspace) == 0;
  if (t) tjDestroy(t);
  return read ? (subsamp + 1) * 16 + colorspace + 1 : -1;
}

// A good 16x16 JPEG.
const std::string& good_jpeg() {
  static const std::string jpeg = [] {
    std::vector<unsigned char> bgr(16 * 16 * 3);
    for (size_t i = 0; i < bgr.size(); ++i) bgr[i] = static_cast<unsigned char>(i * 7);
    tjhandle t = tjInitCompress();
    unsigned char* out = nullptr;
    unsigned long n = 0;
    check(t && tjCompress2(t, bgr.data(), 16, 16 * 3, 16, TJPF_BGR, &out, &n, TJSAMP_420, 90, 0) == 0);
    std::string bytes(reinterpret_cast<char*>(out), n);
    tjFree(out);
    tjDestroy(t);
    return bytes;
  }();
  return jpeg;
}

// Reads every byte, so that a view into freed or moved-from memory is seen by AddressSanitizer.
unsigned sum(std::string_view bytes) {
  unsigned s = 0;
  for (char c : bytes) s += static_cast<unsigned char>(c);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static JpegDecoder decoder;  // one per worker in production, reused frame after frame
  static cv::Mat full, scaled;
  // Frames are moved and copied on their way through the pipeline (batches, queues): the frame
  // used here is a copy in a vector that grew, its original gone; its image bytes must be its own.
  std::vector<ParsedFrame> frames;
  frames.push_back(parse_frame_message(std::string_view(reinterpret_cast<const char*>(data), size), kMaxPixels));
  frames.push_back(frames.front());
  frames.erase(frames.begin());
  const ParsedFrame& p = frames.front();
  if (p.bad != BadFrame::kNone) {
    check(!p.why.empty() && p.why.find('\n') == std::string::npos);
    return 0;
  }
  const FrameHeader& h = p.header;
  check(h.width > 0 && h.height > 0 && uint64_t(h.width) * uint64_t(h.height) <= kMaxPixels && !h.data.empty());
  volatile unsigned keep = sum(h.data);
  (void)keep;
  if (!h.jpeg) {
    check(h.data.size() == size_t(h.width) * size_t(h.height) * 3);
    return 0;
  }
  // Outcomes are counted only for a JPEG whose header reads: a new way for the header to be
  // broken is not worth keeping (its scan is never reached, and libFuzzer would favour it).
  const int kind = jpeg_kind(h.data);
  if (kind >= 0) count_outcome(1 + static_cast<unsigned>(kind));

  const cv::Size expected(h.width, h.height);
  const int shift = 1 + static_cast<int>(static_cast<uint64_t>(h.frame_index) % 3);  // 1/2, 1/4, 1/8
  const int min_w = (h.width + (1 << shift) - 1) >> shift, min_h = (h.height + (1 << shift) - 1) >> shift;
  const cv::Size want = decoder.scaled_size(h.width, h.height, min_w, min_h);
  check(want.width >= min_w && want.height >= min_h && want.width <= h.width && want.height <= h.height);
  const struct {
    int min_w, min_h;
    cv::Size size;
    cv::Mat& out;
  } decodes[] = {{0, 0, expected, full}, {min_w, min_h, want, scaled}};
  for (const auto& d : decodes) {
    const sd::Status st = decoder.decode(h.data, expected, d.min_w, d.min_h, d.out);
    if (kind >= 0) count_outcome(1000 + static_cast<unsigned>(d.min_w ? shift : 0), st);
    if (st) {
      check(d.out.size() == d.size && d.out.type() == CV_8UC3);
    } else {
      // A frame refused must not spoil the next: the same decoder still decodes a good JPEG.
      static cv::Mat probe_out;
      check(!st.error().message.empty() && bool(decoder.decode(good_jpeg(), {16, 16}, 0, 0, probe_out)));
    }
  }
  return 0;
}

// Mutates a message that parses in one of its parts, most often the image bytes; anything else as
// bytes. Deterministic for a given seed (libFuzzer's, from -seed).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  streamdet::wire::Frame msg;
  if (rng() % 2 == 0 || size > static_cast<size_t>(INT32_MAX) || !msg.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, max_size);
  switch (rng() % 8) {
    case 0: {  // the width and height that the JPEG's own header gives (after its SOF was mutated)
      tjhandle t = tjInitDecompress();
      int w = 0, h = 0, subsamp = 0, colorspace = 0;
      if (t && tjDecompressHeader3(t, reinterpret_cast<const unsigned char*>(msg.data().data()), msg.data().size(), &w, &h, &subsamp,
                                   &colorspace) == 0) {
        msg.set_width(static_cast<uint32_t>(w));
        msg.set_height(static_cast<uint32_t>(h));
      } else {
        msg.set_width(1 + rng() % 256);
        msg.set_height(1 + rng() % 256);
      }
      if (t) tjDestroy(t);
      break;
    }
    case 1:  // the encoding, and the frame index (which picks the reduced scale)
      msg.set_encoding(static_cast<streamdet::wire::Frame::Encoding>(rng() % 3));
      msg.set_frame_index(static_cast<int64_t>(rng() % 4));
      break;
    default: {  // the image bytes, within what leaves the message under max_size
      const std::string& bytes = msg.data();
      // Two times in three, only what follows the first start of scan: a mutation of a whole
      // small JPEG mostly lands in its tables and breaks them, and the scan is rarely reached.
      size_t from = 0;
      if (const size_t sos = bytes.find("\xff\xda"); rng() % 3 != 0 && sos != std::string::npos && sos + 4 <= bytes.size())
        from = std::min(bytes.size(), sos + 2 + (static_cast<size_t>(static_cast<unsigned char>(bytes[sos + 2])) << 8 |
                                                 static_cast<unsigned char>(bytes[sos + 3])));
      const size_t rest = msg.ByteSizeLong() - bytes.size() + from + 8;
      if (max_size <= rest) return LLVMFuzzerMutate(data, size, max_size);
      const size_t cap = max_size - rest;
      std::string part = bytes.substr(from, cap);
      const size_t n = part.size();
      part.resize(cap);
      part.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(part.data()), n, cap));
      msg.set_data(bytes.substr(0, from) + part);
      break;
    }
  }
  const std::string out = msg.SerializeAsString();
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

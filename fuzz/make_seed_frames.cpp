// Writes the frame fuzz target's seed corpus into a folder: small frame messages, valid (JPEG at
// 4:2:0, 4:2:2 progressive, 4:4:4 and grayscale; raw BGR) and broken (a truncated JPEG, a JPEG
// whose message lies about its size, a short raw frame, no encoding, too large, not protobuf).
// The committed copy is tests/data/fuzz_frames/ (what scripts/fuzz.sh runs, the same bytes on
// every machine whatever its libjpeg-turbo, with the fuzzer's findings); this program
// regenerates the seeds:
//   build-fuzz/make_seed_frames tests/data/fuzz_frames
#include <turbojpeg.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "transport/messages.pb.h"

using streamdet::wire::Frame;

namespace {

// A gradient with a diagonal stripe: a few DCT coefficients in every block, a small file.
std::vector<unsigned char> picture(int w, int h) {
  std::vector<unsigned char> bgr(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      unsigned char* p = &bgr[(static_cast<size_t>(y) * w + x) * 3];
      const bool stripe = ((x + y) / 4) % 3 == 0;
      p[0] = static_cast<unsigned char>(x * 255 / w);
      p[1] = static_cast<unsigned char>(stripe ? 230 : y * 255 / h);
      p[2] = 128;
    }
  return bgr;
}

std::string jpeg(int w, int h, int subsamp, int quality, int flags = 0) {
  const std::vector<unsigned char> bgr = picture(w, h);
  tjhandle t = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  if (!t || tjCompress2(t, bgr.data(), w, w * 3, h, TJPF_BGR, &out, &size, subsamp, quality, flags) != 0) {
    std::fprintf(stderr, "make_seed_frames: JPEG encoding failed: %s\n", tjGetErrorStr2(t));
    std::exit(1);
  }
  std::string bytes(reinterpret_cast<char*>(out), size);
  tjFree(out);
  tjDestroy(t);
  return bytes;
}

Frame frame(int64_t index, uint32_t w, uint32_t h, Frame::Encoding encoding, std::string data) {
  Frame f;
  f.set_source_id("cam0");
  f.set_frame_index(index);
  f.set_capture_time_us(1700000000000000 + index * 33333);
  f.set_width(w);
  f.set_height(h);
  f.set_encoding(encoding);
  f.set_data(std::move(data));
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  std::map<std::string, std::string> seeds;  // file name -> bytes
  auto add = [&](const std::string& name, const Frame& f) { seeds[name] = f.SerializeAsString(); };

  // Valid frames. The frame index picks the fuzz target's reduced scale (1/2, 1/4, 1/8).
  add("jpeg_16x16_420.bin", frame(0, 16, 16, Frame::JPEG, jpeg(16, 16, TJSAMP_420, 90)));
  add("jpeg_64x48_420.bin", frame(1, 64, 48, Frame::JPEG, jpeg(64, 48, TJSAMP_420, 75)));
  add("jpeg_64x48_444.bin", frame(2, 64, 48, Frame::JPEG, jpeg(64, 48, TJSAMP_444, 75)));
  add("jpeg_40x24_422_progressive.bin", frame(3, 40, 24, Frame::JPEG, jpeg(40, 24, TJSAMP_422, 80, TJFLAG_PROGRESSIVE)));
  add("jpeg_32x32_gray.bin", frame(4, 32, 32, Frame::JPEG, jpeg(32, 32, TJSAMP_GRAY, 80)));
  add("raw_bgr_16x8.bin", frame(5, 16, 8, Frame::RAW_BGR, std::string(reinterpret_cast<const char*>(picture(16, 8).data()), 16 * 8 * 3)));
  add("raw_bgr_5x3.bin", frame(6, 5, 3, Frame::RAW_BGR, std::string(reinterpret_cast<const char*>(picture(5, 3).data()), 5 * 3 * 3)));
  // Bytes short enough to be kept inside the string object: a moved frame must view its own
  // (tests/frame_codec_test.cpp, ACopiedOrMovedFrameViewsItsOwnBytes).
  add("raw_bgr_2x2.bin", frame(12, 2, 2, Frame::RAW_BGR, std::string(reinterpret_cast<const char*>(picture(2, 2).data()), 2 * 2 * 3)));

  // Broken ones, each refused (or, for the truncated JPEG, decoded with a warning).
  const std::string j = jpeg(64, 48, TJSAMP_420, 75);
  add("broken_jpeg_truncated.bin", frame(7, 64, 48, Frame::JPEG, j.substr(0, j.size() / 2)));
  add("broken_jpeg_size_lie.bin", frame(8, 8, 8, Frame::JPEG, jpeg(16, 16, TJSAMP_420, 90)));
  add("broken_raw_short.bin", frame(9, 16, 8, Frame::RAW_BGR, std::string(100, '\x40')));
  add("broken_no_encoding.bin", frame(10, 16, 16, Frame::ENCODING_UNSPECIFIED, j));
  add("broken_too_large.bin", frame(11, 100000, 100000, Frame::JPEG, jpeg(16, 16, TJSAMP_444, 50)));
  seeds["broken_not_protobuf.bin"] = "\xff\xd8\xff\xe0 a JPEG marker, not a message \xff\xff\xff\xff";

  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << bytes;
    if (!out) {
      std::fprintf(stderr, "make_seed_frames: cannot write %s/%s\n", dir.c_str(), name.c_str());
      return 1;
    }
  }
  return 0;
}

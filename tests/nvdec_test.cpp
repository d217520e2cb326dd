// NVDEC's loader and decoder (engine/native/cuda/nvdec_*.h) where a host can test them: a missing
// library or one lacking an entry point is one line naming it, a decoder asked for where NVDEC is
// missing says why in one line and does not crash. Where a GPU with NVDEC is present (the GPU
// check's streamdet_native_tests), errors of the stream itself. The decode of a real clip against
// the CPU's frames is the GPU check's (tools/nvdec_check.cpp: it needs the clip FFmpeg makes here).
#include <gtest/gtest.h>

#include <vector>

#include "engine/native/cuda/nvdec_decoder.h"
#ifdef STREAMDET_HAVE_CUDA
#include "engine/native/cuda/nvdec_library.h"
#endif

namespace sd::native::cuda {
namespace {

#ifdef STREAMDET_HAVE_CUDA
TEST(NvdecLibrary, AMissingLibraryIsOneLineNamingIt) {
  auto lib = NvcuvidLibrary::open("libnvcuvid_not_here.so.1", "libc.so.6");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(lib.error().message.find("NVDEC not available: cannot load libnvcuvid_not_here.so.1"), std::string::npos) << lib.error().message;
  EXPECT_EQ(lib.error().message.find('\n'), std::string::npos);
  auto no_driver = NvcuvidLibrary::open("libnvcuvid.so.1", "libcuda_not_here.so.1");
  ASSERT_FALSE(no_driver);
  EXPECT_NE(no_driver.error().message.find("libcuda_not_here.so.1"), std::string::npos) << no_driver.error().message;
}

TEST(NvdecLibrary, ALibraryWithoutTheEntryPointsIsRefusedByName) {
  auto lib = NvcuvidLibrary::open("libc.so.6", "libc.so.6");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().message, "NVDEC not available: libc.so.6 lacks cuvidGetDecoderCaps");
}
#endif

TEST(NvdecDecoder, WithoutNvdecCreateSaysWhyInOneLine) {
  const Status support = nvdec_support(NvdecCodec::kH264);
  if (support) GTEST_SKIP() << "NVDEC decodes H.264 here: the GPU check's case";
  for (NvdecCodec codec : {NvdecCodec::kH264, NvdecCodec::kHevc}) {
    auto d = NvdecDecoder::create(codec);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, ErrorCode::kUnsupported);
    EXPECT_EQ(d.error().message.rfind("NVDEC not available: ", 0), 0u) << d.error().message;
    EXPECT_EQ(d.error().message.find('\n'), std::string::npos);
  }
  EXPECT_EQ(nvdec_summary().rfind("missing, NVDEC not available: ", 0), 0u) << nvdec_summary();
  EXPECT_NE(nvdec_summary().find("video is decoded on the CPU"), std::string::npos);
}

// Where NVDEC is present: bytes that are no H.264 make no frame and no crash, the end of the
// stream is clean, and a frame that was never decoded cannot be downloaded.
TEST(NvdecDecoder, GarbageMakesNoFrameAndNoCrash) {
  if (Status s = nvdec_support(NvdecCodec::kH264); !s) GTEST_SKIP() << s.error().message;
  auto d = NvdecDecoder::create(NvdecCodec::kH264);
  ASSERT_TRUE(d) << d.error().message;
  std::vector<uint8_t> junk(4096);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37 + 11);
  (void)(*d)->decode(junk.data(), junk.size(), 0);  // an error or nothing: either is fine, a crash is not
  ASSERT_TRUE((*d)->flush()) << "the end of a stream with no picture";
  EXPECT_FALSE((*d)->next().has_value());
  NvdecFrame empty;
  std::vector<uint8_t> host(16);
  EXPECT_FALSE(empty.download_nv12(host.data(), 4));
}

}  // namespace
}  // namespace sd::native::cuda

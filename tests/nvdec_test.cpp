// NVDEC's loader and decoder (engine/native/cuda/nvdec_*.h) where a host can test them: a missing
// library or one lacking an entry point is one line naming it, a decoder asked for where NVDEC is
// missing says why in one line and does not crash. Where a GPU with NVDEC is present (the GPU
// check's streamdet_native_tests): garbage in, and with the H.264 clip the pack puts beside this
// program (nvdec/, tools/nvdec_clip.h): the frame pool's limit, frames that outlive their decoder,
// and the device frame going to letterbox_nv12_gpu as it is. The per-frame PSNR against the CPU
// decoder is the GPU check's own part (tools/nvdec_check.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "engine/native/cuda/nvdec_decoder.h"
#ifdef STREAMDET_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "engine/native/cuda/device_buffer.h"
#include "engine/native/cuda/gpu_preprocess.h"
#include "engine/native/cuda/nvdec_library.h"
#include "gpu_frames_vectors.h"
#include "nvdec_clip.h"
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

#ifdef STREAMDET_HAVE_CUDA
// The pack's H.264 clip beside this program (gpu-pack.sh), where NVDEC is present; else why not.
Result<NvdecClip> clip_beside_this_program() {
  if (Status s = nvdec_support(NvdecCodec::kH264); !s) return tl::unexpected(s.error());
  std::error_code ec;
  const auto dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "nvdec";
  if (ec || !std::filesystem::exists(dir / "clip.json"))
    return fail(ErrorCode::kSource, "no NVDEC clip at " + dir.string() + " (the GPU pack puts it there)");
  return load_nvdec_clip(dir.string());
}

TEST(NvdecDecoder, AConsumerHoldingEveryFrameIsStoppedAtThePoolsLimit) {
  auto clip = clip_beside_this_program();
  if (!clip) GTEST_SKIP() << clip.error().message;
  // The decoder waits for a buffer to come back; this consumer never gives one back.
  auto d = NvdecDecoder::create(NvdecCodec::kH264, 0, NvdecPoolOptions{32, 300});
  ASSERT_TRUE(d) << d.error().message;
  std::vector<NvdecFrame> held;
  Status last = ok();
  for (const auto& p : clip->packets) {
    last = (*d)->decode(clip->stream.data() + p.offset, p.size, p.pts);
    if (!last) break;
    while (auto f = (*d)->next()) held.push_back(std::move(*f));
  }
  if (last) last = (*d)->flush();
  ASSERT_FALSE(last) << "48 frames held: more than the pool's 32";
  EXPECT_NE(last.error().message.find("all 32 decoded frames on the GPU held"), std::string::npos) << last.error().message;
  EXPECT_LE(held.size(), 32u);
}

TEST(NvdecDecoder, FramesOutliveTheirDecoderAndEqualTheReference) {
  auto clip = clip_beside_this_program();
  if (!clip) GTEST_SKIP() << clip.error().message;
  std::vector<NvdecFrame> last_three;
  size_t n = 0;
  {
    auto d = NvdecDecoder::create(NvdecCodec::kH264);
    ASSERT_TRUE(d) << d.error().message;
    auto take = [&] {
      while (auto f = (*d)->next()) {
        ++n;
        last_three.push_back(std::move(*f));  // the others go back to the pool as they are dropped
        if (last_three.size() > 3) last_three.erase(last_three.begin());
      }
    };
    for (const auto& p : clip->packets) {
      ASSERT_TRUE((*d)->decode(clip->stream.data() + p.offset, p.size, p.pts));
      take();
    }
    ASSERT_TRUE((*d)->flush());
    take();
  }  // the decoder is gone; its frames are not
  ASSERT_EQ(n, clip->frames());
  std::vector<uint8_t> host(clip->frame_bytes());
  for (size_t k = 0; k < last_three.size(); ++k) {
    const size_t i = clip->frames() - last_three.size() + k;
    EXPECT_EQ(last_three[k].pts(), clip->display_pts[i]);
    ASSERT_TRUE(last_three[k].download_nv12(host.data(), clip->width));
    EXPECT_EQ(psnr_u8(host.data(), clip->reference_frame(i), host.size()), kIdenticalPsnr) << "frame " << i;
  }
}

// The wiring's contract: an NvdecFrame is an Nv12Image as it is (luma, chroma, one pitch), and the
// letterbox makes of it exactly what it makes of the same pixels uploaded from the reference.
TEST(NvdecDecoder, TheDeviceFrameGoesToTheLetterboxAsItIs) {
  auto clip = clip_beside_this_program();
  if (!clip) GTEST_SKIP() << clip.error().message;
  auto d = NvdecDecoder::create(NvdecCodec::kH264);
  ASSERT_TRUE(d) << d.error().message;
  std::optional<NvdecFrame> first;
  for (const auto& p : clip->packets) {
    ASSERT_TRUE((*d)->decode(clip->stream.data() + p.offset, p.size, p.pts));
    if ((first = (*d)->next())) break;
  }
  if (!first) {
    ASSERT_TRUE((*d)->flush());
    first = (*d)->next();
  }
  ASSERT_TRUE(first.has_value());
  InputPlacement place;
  place.dst_width = place.dst_height = 320;
  place.content_width = 320, place.content_height = 180, place.x0 = 0, place.y0 = 70;
  for (int c = 0; c < 3; ++c) place.mul[c] = 1.0f / 255, place.pad[c] = 114.0f / 255;
  const size_t out_bytes = size_t{3} * 320 * 320 * sizeof(float);
  DeviceBuffer from_nvdec, from_reference, uploaded;
  ASSERT_TRUE(from_nvdec.reserve(out_bytes));
  ASSERT_TRUE(from_reference.reserve(out_bytes));
  ASSERT_TRUE(uploaded.reserve(clip->frame_bytes()));
  ASSERT_EQ(cudaMemcpy(uploaded.get(), clip->reference_frame(0), clip->frame_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  const Nv12Image device{first->luma(), first->chroma(), first->width(), first->height(), first->pitch(), first->pitch()};
  const auto* ref = uploaded.get<const uint8_t>();
  const Nv12Image host{ref, ref + static_cast<size_t>(clip->width) * clip->height, clip->width, clip->height, clip->width, clip->width};
  ASSERT_TRUE(letterbox_nv12_gpu(device, place, InputLayout::kNchwF32, from_nvdec.get(), nullptr));
  ASSERT_TRUE(letterbox_nv12_gpu(host, place, InputLayout::kNchwF32, from_reference.get(), nullptr));
  std::vector<float> a(out_bytes / sizeof(float)), b(a.size());
  ASSERT_EQ(cudaMemcpy(a.data(), from_nvdec.get(), out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b.data(), from_reference.get(), out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(a, b);
}

// The pipeline's two ways for an NVDEC frame (docs/gpu.md, "NVDEC"): kept on the GPU, its handle's
// NV12 (what the pipeline's Frame::device carries) letterboxed where it lies, as the GPU frame
// input does (put_nv12_device); or downloaded (the handle's download, as Frame::to_host) and
// letterboxed by the CPU reference. Every frame of the clip, within the NV12 kernel's tolerance
// of tests/gpu_frames_test.cpp.
TEST(NvdecDecoder, TheDeviceFramesNetworkInputIsTheDownloadedFramesCpuLetterbox) {
  auto clip = clip_beside_this_program();
  if (!clip) GTEST_SKIP() << clip.error().message;
  auto d = NvdecDecoder::create(NvdecCodec::kH264);
  ASSERT_TRUE(d) << d.error().message;
  const InputPlacement place = test::gpu_frames::placement_for(clip->width, clip->height, 320, 320, PreprocessSpec{});
  const size_t out_floats = size_t{3} * 320 * 320;
  DeviceBuffer dst;
  ASSERT_TRUE(dst.reserve(out_floats * sizeof(float)));
  std::vector<float> from_device(out_floats);
  std::vector<uint8_t> host(clip->frame_bytes());
  size_t compared = 0;
  auto compare = [&](const NvdecFrame& f) {
    const DeviceFrameRef& handle = f.handle();
    const DeviceNv12& nv12 = handle.nv12();
    const Nv12Image img{nv12.luma, nv12.chroma, nv12.width, nv12.height, nv12.pitch, nv12.pitch};
    ASSERT_TRUE(letterbox_nv12_gpu(img, place, InputLayout::kNchwF32, dst.get(), nullptr));
    ASSERT_EQ(cudaMemcpy(from_device.data(), dst.get(), out_floats * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_TRUE(handle.download_nv12(host.data(), nv12.width));
    const std::vector<float> from_host = test::gpu_frames::reference_letterbox_nv12(host.data(), nv12.width, nv12.height, place);
    EXPECT_LE(test::gpu_frames::max_level_diff(from_device, from_host, place), 3.2f * 1.001f) << "frame pts " << f.pts();
    ++compared;
  };
  for (const auto& p : clip->packets) {
    ASSERT_TRUE((*d)->decode(clip->stream.data() + p.offset, p.size, p.pts));
    while (auto f = (*d)->next()) compare(*f);
  }
  ASSERT_TRUE((*d)->flush());
  while (auto f = (*d)->next()) compare(*f);
  EXPECT_EQ(compared, clip->frames());
}
#endif

}  // namespace
}  // namespace sd::native::cuda

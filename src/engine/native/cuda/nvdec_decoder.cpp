#include "engine/native/cuda/nvdec_decoder.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/nvdec_library.h"

namespace sd::native::cuda {

const char* nvdec_codec_name(NvdecCodec codec) { return codec == NvdecCodec::kH264 ? "H.264" : "HEVC"; }

namespace {

// Pictures the parser holds back before display (FFmpeg's cuviddec uses 4): lets NVDEC decode
// ahead of the copy-out. Each is a frame of latency on a live stream.
constexpr unsigned kDisplayDelay = 2;

cudaVideoCodec cuvid_codec(NvdecCodec codec) { return codec == NvdecCodec::kH264 ? cudaVideoCodec_H264 : cudaVideoCodec_HEVC; }

// The primary context made current on this thread for the scope (NVDEC's calls and the runtime's
// copies run in it), then the previous one restored.
class ContextScope {
 public:
  ContextScope(const NvcuvidLibrary& lib, CUcontext ctx) : lib_(lib) { pushed_ = lib.api().CtxPushCurrent(ctx) == CUDA_SUCCESS; }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (pushed_) lib_.api().CtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  Status status() const { return pushed_ ? ok() : fail(ErrorCode::kInternal, "NVDEC: cuCtxPushCurrent failed"); }

 private:
  const NvcuvidLibrary& lib_;
  bool pushed_ = false;
};

// The runtime's primary context of `device`, created if need be (cudaSetDevice + cudaFree(0)).
Result<CUcontext> primary_context(const NvcuvidLibrary& lib, int device) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return fail(ErrorCode::kUnsupported, std::string("NVDEC not available: no usable CUDA device (") + cudaGetErrorString(e) + ")");
  if (device < 0 || device >= count)
    return fail(ErrorCode::kUnsupported, "NVDEC not available: no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " found)");
  SD_CUDA_TRY(cudaSetDevice(device));
  SD_CUDA_TRY(cudaFree(nullptr));
  CUcontext ctx = nullptr;
  SD_TRY(lib.check(lib.api().CtxGetCurrent(&ctx), "cuCtxGetCurrent"));
  if (!ctx) return fail(ErrorCode::kInternal, "NVDEC: no current CUDA context after cudaSetDevice(" + std::to_string(device) + ")");
  return ctx;
}

Status check_caps(const NvcuvidLibrary& lib, NvdecCodec codec, int device) {
  CUVIDDECODECAPS caps{};
  caps.eCodecType = cuvid_codec(codec);
  caps.eChromaFormat = cudaVideoChromaFormat_420;
  caps.nBitDepthMinus8 = 0;
  SD_TRY(lib.check(lib.api().GetDecoderCaps(&caps), "cuvidGetDecoderCaps"));
  if (!caps.bIsSupported)
    return fail(ErrorCode::kUnsupported, std::string("NVDEC not available: the NVDEC of cuda:") + std::to_string(device) + " does not decode " +
                                             nvdec_codec_name(codec) + " 4:2:0 8-bit");
  return ok();
}

}  // namespace

// The decoder's buffers (DeviceFramePool): device memory of the runtime's primary context, in
// which the CUDA backend's kernels run too.
class CudaFrameMemory final : public DeviceFrameMemory {
 public:
  CudaFrameMemory(const NvcuvidLibrary& lib, CUcontext ctx, int device) : lib_(lib), ctx_(ctx), device_(device) {}
  Result<Buffer> allocate(int width, int height) override {
    ContextScope scope(lib_, ctx_);
    SD_TRY(scope.status());
    void* p = nullptr;
    size_t pitch = 0;
    SD_CUDA_TRY(cudaMallocPitch(&p, &pitch, static_cast<size_t>(width), static_cast<size_t>(height) * 3 / 2));
    return Buffer{static_cast<uint8_t*>(p), static_cast<int64_t>(pitch)};
  }
  void free(Buffer b) override {
    ContextScope scope(lib_, ctx_);
    cudaFree(b.data);  // nothing to do about a failure while letting go
  }
  Status download(const DeviceNv12& f, uint8_t* dst, int64_t dst_pitch) override {
    ContextScope scope(lib_, ctx_);
    SD_TRY(scope.status());
    SD_CUDA_TRY(cudaMemcpy2D(dst, static_cast<size_t>(dst_pitch), f.luma, static_cast<size_t>(f.pitch), static_cast<size_t>(f.width),
                             static_cast<size_t>(f.height), cudaMemcpyDeviceToHost));
    SD_CUDA_TRY(cudaMemcpy2D(dst + dst_pitch * f.height, static_cast<size_t>(dst_pitch), f.chroma, static_cast<size_t>(f.pitch),
                             static_cast<size_t>(f.width), static_cast<size_t>(f.height / 2), cudaMemcpyDeviceToHost));
    return ok();
  }
  int device() const override { return device_; }

 private:
  const NvcuvidLibrary& lib_;
  CUcontext ctx_;
  int device_;
};

struct NvdecDecoder::State {
  const NvcuvidLibrary* lib = nullptr;
  NvdecCodec codec = NvdecCodec::kH264;
  int device = 0;
  CUcontext ctx = nullptr;
  cudaStream_t stream = nullptr;
  CUvideoparser parser = nullptr;
  CUvideodecoder decoder = nullptr;
  // The decoder's geometry (from the sequence header): coded size, the output (the display area,
  // cut to even sizes), the surfaces.
  unsigned coded_width = 0, coded_height = 0, surfaces = 0;
  int width = 0, height = 0;
  NvdecPoolOptions pool_options;
  std::shared_ptr<DeviceFramePool> pool;
  std::deque<NvdecFrame> ready;
  Status error = ok();  // the first error met inside a parser callback
  int64_t damaged = 0;

  ~State() {
    if (!lib) return;
    ContextScope scope(*lib, ctx);
    if (parser) lib->api().DestroyVideoParser(parser);
    if (decoder) lib->api().DestroyDecoder(decoder);
    if (stream) cudaStreamDestroy(stream);
  }

  // Records the first error of a parse call and returns 0 (a callback's failure).
  int failed(const Status& s) {
    if (error) error = s;
    return 0;
  }

  int on_sequence(CUVIDEOFORMAT* f) {
    if (f->chroma_format != cudaVideoChromaFormat_420 || f->bit_depth_luma_minus8 != 0 || f->bit_depth_chroma_minus8 != 0)
      return failed(fail(ErrorCode::kUnsupported, std::string("NVDEC: this ") + nvdec_codec_name(codec) + " stream is " +
                                                      std::to_string(f->bit_depth_luma_minus8 + 8) + "-bit " +
                                                      (f->chroma_format == cudaVideoChromaFormat_420 ? "4:2:0" : "not 4:2:0") +
                                                      "; streamdet's NVDEC path decodes 8-bit 4:2:0 (NV12) only"));
    const int display_w = f->display_area.right - f->display_area.left, display_h = f->display_area.bottom - f->display_area.top;
    // NV12 needs even sizes: an odd display size loses its last column or row.
    const int w = display_w & ~1, h = display_h & ~1;
    if (w <= 0 || h <= 0)
      return failed(fail(ErrorCode::kSource, "NVDEC: the stream's display area is " + std::to_string(display_w) + "x" + std::to_string(display_h)));
    const unsigned surfaces = std::max<unsigned>(f->min_num_decode_surfaces, 1) + kDisplayDelay + 1;
    if (decoder && f->coded_width == coded_width && f->coded_height == coded_height && w == width && h == height &&
        surfaces <= this->surfaces)
      return static_cast<int>(this->surfaces);  // the same sequence again (a repeated SPS, a new GOP)
    if (decoder) {
      // A new size: a new decoder (the frames made so far are copies and stay valid).
      lib->api().DestroyDecoder(decoder);
      decoder = nullptr;
    }
    CUVIDDECODECAPS caps{};
    caps.eCodecType = f->codec;
    caps.eChromaFormat = f->chroma_format;
    if (Status s = lib->check(lib->api().GetDecoderCaps(&caps), "cuvidGetDecoderCaps"); !s) return failed(s);
    if (!caps.bIsSupported || f->coded_width > caps.nMaxWidth || f->coded_height > caps.nMaxHeight ||
        f->coded_width < caps.nMinWidth || f->coded_height < caps.nMinHeight ||
        (f->coded_width >> 4) * (f->coded_height >> 4) > caps.nMaxMBCount)
      return failed(fail(ErrorCode::kUnsupported, std::string("NVDEC: this GPU does not decode ") + nvdec_codec_name(codec) + " at " +
                                                      std::to_string(f->coded_width) + "x" + std::to_string(f->coded_height) +
                                                      " (at most " + std::to_string(caps.nMaxWidth) + "x" + std::to_string(caps.nMaxHeight) + ")"));
    CUVIDDECODECREATEINFO ci{};
    ci.ulWidth = f->coded_width;
    ci.ulHeight = f->coded_height;
    ci.ulMaxWidth = f->coded_width;
    ci.ulMaxHeight = f->coded_height;
    ci.ulNumDecodeSurfaces = surfaces;
    ci.CodecType = f->codec;
    ci.ChromaFormat = f->chroma_format;
    ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    ci.bitDepthMinus8 = 0;
    ci.display_area.left = static_cast<short>(f->display_area.left);
    ci.display_area.top = static_cast<short>(f->display_area.top);
    ci.display_area.right = static_cast<short>(f->display_area.left + w);
    ci.display_area.bottom = static_cast<short>(f->display_area.top + h);
    ci.OutputFormat = cudaVideoSurfaceFormat_NV12;
    ci.DeinterlaceMode = f->progressive_sequence ? cudaVideoDeinterlaceMode_Weave : cudaVideoDeinterlaceMode_Adaptive;
    ci.ulTargetWidth = static_cast<unsigned>(w);  // the display area as it is: no scaling
    ci.ulTargetHeight = static_cast<unsigned>(h);
    ci.ulNumOutputSurfaces = 2;
    if (Status s = lib->check(lib->api().CreateDecoder(&decoder, &ci), "cuvidCreateDecoder"); !s) return failed(s);
    coded_width = f->coded_width, coded_height = f->coded_height, this->surfaces = surfaces;
    if (!pool || pool->width() != w || pool->height() != h)  // frames of the old size keep their pool
      pool = DeviceFramePool::create(std::make_unique<CudaFrameMemory>(*lib, ctx, device), w, h, pool_options.frames);
    width = w, height = h;
    return static_cast<int>(surfaces);  // > 1: the parser's decode surfaces follow ours
  }

  int on_decode(CUVIDPICPARAMS* pic) {
    if (!decoder) return failed(fail(ErrorCode::kSource, "NVDEC: a picture before any sequence header"));
    if (Status s = lib->check(lib->api().DecodePicture(decoder, pic), "cuvidDecodePicture"); !s) return failed(s);
    return 1;
  }

  int on_display(CUVIDPARSERDISPINFO* d) {
    if (!d) return 1;  // the end of the stream (CUVID_PKT_NOTIFY_EOS)
    CUVIDPROCPARAMS pp{};
    pp.progressive_frame = d->progressive_frame;
    pp.second_field = d->repeat_first_field + 1;
    pp.top_field_first = d->top_field_first;
    pp.unpaired_field = d->repeat_first_field < 0;
    pp.output_stream = reinterpret_cast<CUstream>(stream);
    unsigned long long src = 0;
    unsigned src_pitch = 0;
    if (Status s = lib->check(lib->api().MapVideoFrame64(decoder, d->picture_index, &src, &src_pitch, &pp), "cuvidMapVideoFrame64"); !s)
      return failed(s);
    CUVIDGETDECODESTATUS status{};
    if (lib->api().GetDecodeStatus(decoder, d->picture_index, &status) == CUDA_SUCCESS &&
        (status.decodeStatus == cuvidDecodeStatus_Error || status.decodeStatus == cuvidDecodeStatus_Error_Concealed))
      ++damaged;
    Status copied = copy_out(src, src_pitch, d->timestamp);
    Status unmapped = lib->check(lib->api().UnmapVideoFrame64(decoder, src), "cuvidUnmapVideoFrame64");
    if (!copied) return failed(copied);
    if (!unmapped) return failed(unmapped);
    return 1;
  }

  // The mapped surface into a buffer of our pool (luma, then the chroma plane, which NVDEC puts
  // after the output height's luma rows), waited for, so the surface can be unmapped at once and
  // the frame is complete when it is handed out: whoever reads it later (the letterbox kernel on a
  // worker's stream, a download) needs no event of ours. When the consumer holds every buffer of
  // the pool this waits for one (back-pressure on the reader).
  Status copy_out(unsigned long long src, unsigned src_pitch, int64_t pts) {
    SD_ASSIGN_OR_RETURN(DeviceFrameRef ref, pool->acquire(pts, pool_options.stall_ms));
    const DeviceNv12& b = ref.nv12();
    auto* dst = const_cast<uint8_t*>(b.luma);  // the pool's buffer: ours to write until handed out
    const auto* luma = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(src));
    const uint8_t* chroma = luma + static_cast<size_t>(src_pitch) * static_cast<size_t>((height + 1) & ~1);
    SD_CUDA_TRY(cudaMemcpy2DAsync(dst, static_cast<size_t>(b.pitch), luma, src_pitch, static_cast<size_t>(width), static_cast<size_t>(height),
                                  cudaMemcpyDeviceToDevice, stream));
    SD_CUDA_TRY(cudaMemcpy2DAsync(const_cast<uint8_t*>(b.chroma), static_cast<size_t>(b.pitch), chroma, src_pitch, static_cast<size_t>(width),
                                  static_cast<size_t>(height / 2), cudaMemcpyDeviceToDevice, stream));
    SD_CUDA_TRY(cudaStreamSynchronize(stream));
    ready.emplace_back(std::move(ref));
    return ok();
  }

  static int CUDAAPI sequence_cb(void* self, CUVIDEOFORMAT* f) { return static_cast<State*>(self)->on_sequence(f); }
  static int CUDAAPI decode_cb(void* self, CUVIDPICPARAMS* p) { return static_cast<State*>(self)->on_decode(p); }
  static int CUDAAPI display_cb(void* self, CUVIDPARSERDISPINFO* d) { return static_cast<State*>(self)->on_display(d); }

  Status parse(CUVIDSOURCEDATAPACKET& packet, const char* what) {
    ContextScope scope(*lib, ctx);
    SD_TRY(scope.status());
    const CUresult r = lib->api().ParseVideoData(parser, &packet);
    if (!error) return std::exchange(error, ok());  // a callback's error says more than the parser's
    return lib->check(r, what);
  }
};

NvdecDecoder::NvdecDecoder(std::unique_ptr<State> state) : s_(std::move(state)) {}
NvdecDecoder::~NvdecDecoder() = default;

Result<std::unique_ptr<NvdecDecoder>> NvdecDecoder::create(NvdecCodec codec, int device, NvdecPoolOptions pool) {
  const NvcuvidLibrary* lib = NvcuvidLibrary::shared();
  if (!lib) return fail(ErrorCode::kUnsupported, NvcuvidLibrary::shared_problem());
  auto s = std::make_unique<State>();
  s->codec = codec;
  s->device = device;
  s->pool_options = pool;
  SD_ASSIGN_OR_RETURN(s->ctx, primary_context(*lib, device));
  s->lib = lib;  // from here on ~State releases what was made
  ContextScope scope(*lib, s->ctx);
  SD_TRY(scope.status());
  SD_TRY(check_caps(*lib, codec, device));
  SD_CUDA_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  CUVIDPARSERPARAMS pp{};
  pp.CodecType = cuvid_codec(codec);
  pp.ulMaxNumDecodeSurfaces = 1;  // the sequence callback says how many
  pp.ulClockRate = 0;             // timestamps are passed through as given
  pp.ulMaxDisplayDelay = kDisplayDelay;
  pp.pUserData = s.get();
  pp.pfnSequenceCallback = &State::sequence_cb;
  pp.pfnDecodePicture = &State::decode_cb;
  pp.pfnDisplayPicture = &State::display_cb;
  SD_TRY(lib->check(lib->api().CreateVideoParser(&s->parser, &pp), "cuvidCreateVideoParser"));
  return std::unique_ptr<NvdecDecoder>(new NvdecDecoder(std::move(s)));
}

Status NvdecDecoder::decode(const uint8_t* data, size_t size, int64_t pts) {
  if (size == 0) return ok();
  CUVIDSOURCEDATAPACKET packet{};
  packet.flags = CUVID_PKT_TIMESTAMP | CUVID_PKT_ENDOFPICTURE;
  packet.payload_size = static_cast<tcu_ulong>(size);
  packet.payload = data;
  packet.timestamp = pts;
  return s_->parse(packet, "cuvidParseVideoData");
}

Status NvdecDecoder::flush() {
  CUVIDSOURCEDATAPACKET packet{};
  packet.flags = CUVID_PKT_ENDOFSTREAM;
  return s_->parse(packet, "cuvidParseVideoData (end of stream)");
}

std::optional<NvdecFrame> NvdecDecoder::next() {
  if (s_->ready.empty()) return std::nullopt;
  NvdecFrame f = std::move(s_->ready.front());
  s_->ready.pop_front();
  return f;
}

std::string NvdecDecoder::describe() const {
  std::string d = std::string("NVDEC ") + nvdec_codec_name(s_->codec) + " on cuda:" + std::to_string(s_->device);
  if (s_->decoder) d += ", " + std::to_string(s_->width) + "x" + std::to_string(s_->height) + ", " + std::to_string(s_->surfaces) + " decode surfaces";
  return d;
}

int64_t NvdecDecoder::damaged_pictures() const { return s_->damaged; }

Status nvdec_support(NvdecCodec codec, int device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, Status> known;  // (codec, device) -> verdict
  std::lock_guard lock(mutex);
  const auto key = std::make_pair(static_cast<int>(codec), device);
  if (auto it = known.find(key); it != known.end()) return it->second;
  Status verdict = [&]() -> Status {
    const NvcuvidLibrary* lib = NvcuvidLibrary::shared();
    if (!lib) return fail(ErrorCode::kUnsupported, NvcuvidLibrary::shared_problem());
    SD_ASSIGN_OR_RETURN(CUcontext ctx, primary_context(*lib, device));
    ContextScope scope(*lib, ctx);
    SD_TRY(scope.status());
    return check_caps(*lib, codec, device);
  }();
  known.emplace(key, verdict);
  return verdict;
}

std::string nvdec_summary() {
  const std::string cpu = ": video is decoded on the CPU";
  const NvcuvidLibrary* lib = NvcuvidLibrary::shared();
  if (!lib) return "missing, " + NvcuvidLibrary::shared_problem() + cpu;
  std::string codecs;
  std::string problem;
  for (NvdecCodec c : {NvdecCodec::kH264, NvdecCodec::kHevc}) {
    if (Status s = nvdec_support(c); s)
      codecs += std::string(codecs.empty() ? "" : ", ") + nvdec_codec_name(c);
    else if (problem.empty())
      problem = s.error().message;
  }
  if (codecs.empty()) return "missing, " + lib->path() + " loaded but " + problem + cpu;
  return "found, " + lib->path() + ": " + codecs + " on cuda:0";
}

}  // namespace sd::native::cuda

// nvdec_decoder.h in a build without the CUDA toolkit: every video is decoded on the CPU.
#include "engine/native/cuda/nvdec_decoder.h"

namespace sd::native::cuda {

namespace {
const char* const kNoCuda = "NVDEC not available: this streamdet was built without CUDA";
}

struct NvdecDecoder::State {};

const char* nvdec_codec_name(NvdecCodec codec) { return codec == NvdecCodec::kH264 ? "H.264" : "HEVC"; }


NvdecDecoder::NvdecDecoder(std::unique_ptr<State> state) : s_(std::move(state)) {}
NvdecDecoder::~NvdecDecoder() = default;
Result<std::unique_ptr<NvdecDecoder>> NvdecDecoder::create(NvdecCodec, int, NvdecPoolOptions) { return fail(ErrorCode::kUnsupported, kNoCuda); }
Status NvdecDecoder::decode(const uint8_t*, size_t, int64_t) { return fail(ErrorCode::kUnsupported, kNoCuda); }
Status NvdecDecoder::flush() { return fail(ErrorCode::kUnsupported, kNoCuda); }
std::optional<NvdecFrame> NvdecDecoder::next() { return std::nullopt; }
std::string NvdecDecoder::describe() const { return "NVDEC (not built)"; }
int64_t NvdecDecoder::damaged_pictures() const { return 0; }

Status nvdec_support(NvdecCodec, int) { return fail(ErrorCode::kUnsupported, kNoCuda); }
std::string nvdec_summary() { return std::string("missing, ") + kNoCuda + ": video is decoded on the CPU"; }

}  // namespace sd::native::cuda

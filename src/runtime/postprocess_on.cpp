#include "runtime/postprocess_on.h"

#include "postprocess/yolov5_decoder.h"
#include "postprocess/yolov8_decoder.h"
#include "postprocess/yolox_decoder.h"

namespace sd {

std::optional<GpuDetectHead> gpu_head_of(const Decoder& decoder, const DecodeOptions& decode) {
  GpuDetectHead h;
  if (const auto* v8 = dynamic_cast<const YoloV8Decoder*>(&decoder)) {
    h.kind = GpuDetectHead::Kind::kYoloV8;
    h.output = v8->head().output;
    h.num_classes = v8->head().num_classes;
    h.transposed = v8->head().transposed;
    return h;
  }
  if (const auto* v5 = dynamic_cast<const YoloV5Decoder*>(&decoder)) {
    h.kind = GpuDetectHead::Kind::kYoloV5;
    h.output = v5->head().output;
    h.num_classes = v5->head().num_classes;
    return h;
  }
  if (const auto* x = dynamic_cast<const YoloXDecoder*>(&decoder)) {
    const YoloXHead& xh = x->head();
    if (xh.strides.empty() || xh.strides.size() > 4) return std::nullopt;
    h.kind = GpuDetectHead::Kind::kYoloX;
    h.output = xh.output;
    h.num_classes = xh.num_classes;
    h.num_strides = static_cast<int>(xh.strides.size());
    for (size_t i = 0; i < xh.strides.size(); ++i) h.strides[i] = xh.strides[i];
    h.input_width = decode.input_width > 0 ? decode.input_width : xh.input_width;
    h.input_height = decode.input_height > 0 ? decode.input_height : xh.input_height;
    return h;
  }
  return std::nullopt;
}

Result<PostprocessPlace> choose_postprocess_place(const std::string& option, const std::string& engine_device,
                                                  const std::string& engine_name, GpuDetectOutput* detect,
                                                  const Decoder& decoder, const DecodeOptions& decode) {
  if (option != "auto" && option != "cpu" && option != "gpu")
    return fail(ErrorCode::kUsage, "--postprocess-on: expected auto, cpu or gpu, got '" + option + "'");
  PostprocessPlace cpu;
  if (option == "cpu") return cpu;
  const bool on_cuda = engine_device.rfind("cuda", 0) == 0;
  if (!on_cuda || !detect) {
    if (option == "auto") return cpu;
    if (!on_cuda)
      return fail(ErrorCode::kModel, "--postprocess-on gpu: the model runs on " + engine_device +
                                         ", not a CUDA GPU (none is usable here, or --device chose the CPU)");
    return fail(ErrorCode::kUnsupported, "--postprocess-on gpu: the " + engine_name + " engine on " + engine_device +
                                             " cannot decode on the GPU (the native engine can)");
  }
  const auto head = gpu_head_of(decoder, decode);
  if (!head) {
    const std::string why = "the " + std::string(layout_name(decoder.layout())) +
                            " head is decoded on the CPU (the GPU decodes yolov8, yolov5 and yolox heads)";
    if (option == "gpu") return fail(ErrorCode::kUnsupported, "--postprocess-on gpu: " + why);
    cpu.why_cpu = why;
    return cpu;
  }
  return PostprocessPlace{true, detect->where(), *head, ""};
}

}  // namespace sd

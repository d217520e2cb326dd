#include "runtime/stages/inference_stage.h"

#include <algorithm>

#include "engine/gpu_head_on_device.h"
#include "postprocess/postprocessor.h"
#include "preprocess/gpu_placement.h"
#include "core/log.h"
#include "preprocess/letterbox.h"
#include "runtime/nvtx.h"

namespace sd {
namespace {

// A frame decoded at a reduced scale reports its detections in the pixels of the original picture.
void scale_to_original(const Frame& frame, Detections& detections) {
  const cv::Size decoded = frame.size();
  if (frame.original_size.empty() || frame.original_size == decoded || decoded.empty()) return;
  scale_boxes(detections, static_cast<float>(frame.original_size.width) / static_cast<float>(decoded.width),
              static_cast<float>(frame.original_size.height) / static_cast<float>(decoded.height));
}

// --preprocess-on gpu: the batch's frames, as they are, letterboxed on the context's GPU into its
// input, then the model run on them.
Status infer_on_gpu_frames(GpuFrameInput& frames, const std::vector<PacketPtr>& batch, const PreprocessSpec& spec,
                           std::vector<Tensor>& outputs) {
  const int n = static_cast<int>(batch.size());
  for (int i = 0; i < n; ++i) {
    const FramePacket& p = *batch[static_cast<size_t>(i)];
    const GpuInputPlacement placement = gpu_input_placement(p.transform, spec);
    const Frame& f = p.frame;
    if (f.device) {  // decoded on this GPU (NVDEC): read where it is, downloaded or not
      SD_TRY(frames.put_nv12_device(i, n, f.device.nv12(), placement));
    } else if (f.format == PixelFormat::kI420) {
      const cv::Size size = f.size();
      SD_TRY(frames.put_i420(i, n, f.yuv.ptr<uint8_t>(), size.width, size.height, placement));
    } else {
      SD_TRY(frames.put_bgr(i, n, f.image.ptr<uint8_t>(), f.image.cols, f.image.rows, static_cast<int64_t>(f.image.step[0]),
                            placement));
    }
  }
  return frames.infer_put(outputs);
}

}  // namespace

void InferenceStage::run() {
  const std::string name = "worker " + std::to_string(w_);
  StageRecorder& rec = run_.profiler.make_recorder(name);
  nvtx_name_thread(name.c_str());
  const Detector& det = run_.det;
  Postprocessor post(det.decoder, det.decode, det.nms);
  std::vector<PacketPtr> batch, expired;
  batch.reserve(static_cast<size_t>(run_.batch));
  Tensor batch_input;
  bool gpu_frames = run_.frames_on_gpu;  // false after a failure under --preprocess-on auto
  PreprocessScratch fallback_scratch;    // the CPU letterbox after such a failure
  // --postprocess-on: decode + NMS on the context's GPU, false after a failure under auto.
  GpuDetectOutput* gpu_detect = run_.postprocess.gpu ? context_->gpu_detect_output() : nullptr;
  // After a first batch decoded there, the head stays on the device: its copy to the host is
  // skipped (outputs[head] is stale then; a later failure under auto fetches it: host_output).
  GpuHeadOnDevice* head_keeper = dynamic_cast<GpuHeadOnDevice*>(gpu_detect);
  bool head_on_device = false;
  const GpuDetectParams gpu_params{det.decode.conf_threshold, det.nms.iou_threshold, det.nms.agnostic, det.nms.max_det};
  std::vector<Tensor> outputs;
  std::vector<TensorView> views;
  const auto batch_wait = std::chrono::microseconds(static_cast<int64_t>(run_.options.batch_wait_ms * 1000));
  const auto max_age = std::chrono::microseconds(static_cast<int64_t>(run_.options.max_age_ms * 1000));
  while (true) {
    auto t_wait = Clock::now();
    bool more = run_.scheduler->pop_batch(static_cast<size_t>(run_.batch), batch_wait, max_age, batch, expired);
    rec.add_wait(Stage::kInference, ms_since(t_wait));
    for (auto& p : expired) run_.drop(std::move(p), DropReason::kMaxAge, &rec, Stage::kInference);
    expired.clear();
    if (!more) break;
    if (batch.empty()) continue;
    const int n = static_cast<int>(batch.size());
    rec.add_items_in(Stage::kInference, n);
    // The CPU's way: the packets' input planes (letterboxed here when the preprocess stage left
    // that to the GPU and the GPU failed), batched side by side in one NCHW tensor.
    auto infer_on_host = [&]() -> Status {
      if (run_.frames_on_gpu)
        for (auto& p : batch) {
          SD_TRY(p->frame.to_host());  // a frame NVDEC left on the GPU comes down for the CPU's letterbox
          p->input.resize(Shape{1, 3, det.input_size.height, det.input_size.width});
          preprocess_frame(p->frame, det.input_size, det.preprocess, p->input.data(), fallback_scratch);
        }
      if (n == 1) return context_->infer(batch[0]->input.view(), outputs);
      const Shape& one = batch[0]->input.shape();
      batch_input.resize(Shape{n, one[1], one[2], one[3]});
      const int64_t per = one.numel();
      for (int i = 0; i < n; ++i)
        std::copy_n(batch[static_cast<size_t>(i)]->input.data(), per, batch_input.data() + i * per);
      return context_->infer(batch_input.view(), outputs);
    };
    Status st;
    {
      ScopedStage s(rec, Stage::kInference, n, batch[0]->frame.source_id, n == 1 ? batch[0]->frame.index : -1);
      for (auto& p : batch) p->entered[static_cast<size_t>(Stage::kInference)] = Clock::now();
      if (gpu_frames) {
        st = infer_on_gpu_frames(*context_->gpu_frame_input(), batch, det.preprocess, outputs);
        if (!st && run_.options.model.preprocess_on == "auto") {
          // auto chose the GPU for speed: its failure costs the speed, not the run.
          log_warn("worker %d: --preprocess-on auto: the GPU letterbox failed (%s); this worker letterboxes on the CPU from now on",
                   w_, st.error().message.c_str());
          gpu_frames = false;
        }
      }
      if (!gpu_frames) st = infer_on_host();
      const Clock::time_point done = Clock::now();
      for (auto& p : batch) p->left[static_cast<size_t>(Stage::kInference)] = done;
    }
    if (!st) {
      for (auto& p : batch) run_.drop(std::move(p), DropReason::kAborted);
      run_.fail_run(st.error());
      break;
    }
    views.clear();
    for (const auto& t : outputs) views.push_back(t.view());
    for (int i = 0; i < n; ++i) {
      FramePacket& p = *batch[static_cast<size_t>(i)];
      ScopedStage s(rec, Stage::kPostprocess, 1, p.frame.source_id, p.frame.index);
      p.entered[static_cast<size_t>(Stage::kPostprocess)] = Clock::now();
      if (gpu_detect) {
        Status on_gpu = gpu_detect->detect(run_.postprocess.head, gpu_params, i, p.detections);
        if (!on_gpu) {
          if (run_.options.model.postprocess_on != "auto") {
            st = fail(on_gpu.error().code, "--postprocess-on gpu: " + on_gpu.error().message);
            break;
          }
          // auto chose the GPU for speed: its failure costs the speed, not the run.
          log_warn("worker %d: --postprocess-on auto: the decode on the GPU failed (%s); this worker decodes on the CPU from now on",
                   w_, on_gpu.error().message.c_str());
          run_.profiler.postprocess_left_gpu();
          const int head = run_.postprocess.head.output;
          if (head_on_device) {  // this batch's head is on the device alone
            head_keeper->keep_on_device(head, false);
            head_on_device = false;
            st = head_keeper->host_output(head, outputs[static_cast<size_t>(head)]);
            if (!st) break;
            views[static_cast<size_t>(head)] = outputs[static_cast<size_t>(head)].view();
          }
          gpu_detect = nullptr;
        }
      }
      if (!gpu_detect) post.run(views, i, p.detections);
      for (Detection& d : p.detections) p.transform.map_back(d);
      scale_to_original(p.frame, p.detections);
      p.left[static_cast<size_t>(Stage::kPostprocess)] = Clock::now();
    }
    if (!st) {  // --postprocess-on gpu failed: as a failed inference
      for (auto& p : batch) run_.drop(std::move(p), DropReason::kAborted);
      run_.fail_run(st.error());
      break;
    }
    if (gpu_detect && head_keeper && !head_on_device) head_on_device = head_keeper->keep_on_device(run_.postprocess.head.output, true);
    for (auto& p : batch) {
      const auto s = static_cast<size_t>(p->frame.source_id);
      auto r = run_.lanes[s].done->push(std::move(p));
      if (r.refused) run_.drop(std::move(*r.refused), DropReason::kAborted);
    }
    batch.clear();
  }
}

}  // namespace sd

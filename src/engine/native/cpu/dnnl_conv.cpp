// Conv and FusedConv (Conv + post ops: activations and a residual sum) on oneDNN. Activations
// are plain NCHW or NHWC as the executor says (NHWC between convolutions: oneDNN's AVX-512
// kernels run it directly, and the elementwise/concat/split ops between convolutions stay plain
// row-major on the physical layout); weights are reordered once, at kernel creation, to the
// format the primitive chose.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include "core/cpu_isa.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/conv_choice.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/cpu/dnnl_context.h"
#include "engine/native/cpu/pointwise_conv.h"
#include "engine/native/cpu/stem_conv.h"
#include "engine/native/cpu/stem_conv_bf16.h"
#include "engine/native/cpu/timed_choice.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/cpu/weight_cache.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"
#include "engine/native/precision.h"

namespace sd::native::dnnl_ops {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using ops::conv_geometry;
using ops::ConvGeometry;
using ops::PostKind;
using ops::PostOp;

bool is_exp_activation(PostKind k) { return k == PostKind::kSilu || k == PostKind::kSigmoid; }

// oneDNN's eltwise post op for an activation; alpha and beta as oneDNN reads them.
dnnl::algorithm eltwise_for(const PostOp& p, float& alpha, float& beta) {
  alpha = p.alpha, beta = p.beta;
  switch (p.kind) {
    case PostKind::kRelu: alpha = 0; return dnnl::algorithm::eltwise_relu;
    case PostKind::kLeakyRelu: return dnnl::algorithm::eltwise_relu;  // alpha = negative slope
    case PostKind::kSilu:
    case PostKind::kSigmoid: break;  // never given to oneDNN: our own pass runs them (own_post_)
    case PostKind::kHardSwish: return dnnl::algorithm::eltwise_hardswish;
    case PostKind::kClip: return dnnl::algorithm::eltwise_clip;
    case PostKind::kSum: break;  // a binary post op, not an eltwise one
  }
  return dnnl::algorithm::undef;
}

// The stem kernel's in-register form of a single cheap activation; kNone when it has none.
ops::StemActivation stem_activation_for(PostKind k) {
  switch (k) {
    case PostKind::kRelu: return ops::StemActivation::kRelu;
    case PostKind::kLeakyRelu: return ops::StemActivation::kLeakyRelu;
    case PostKind::kHardSwish: return ops::StemActivation::kHardSwish;
    case PostKind::kClip: return ops::StemActivation::kClip;
    default: return ops::StemActivation::kNone;  // SiLU, sigmoid: cheaper as a pass over each row
  }
}

class ConvKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_TRY(init_float(ctx));
    // A bf16 result (kBf16Output, keep_bf16_tensors in precision.h: every reader takes bf16): the
    // kernel chosen above writes float32 into scratch, and the pass that finishes it (our post
    // ops, or a conversion alone) writes bf16 with oneDNN's rounding (bf16_convert.h). Set last:
    // the timings above ran the float32 kernels as they are.
    if (ctx.node.attrs.get_int(kBf16Output, 0) != 0 && !float32_only_) {
      float_result_at_ = (scratch_bytes() + 63) / 64 * 64;
      const bool own_writes_bf16 = (own_wino_ && own_wino_->writes_bf16()) || (own_pw_ && own_pw_->bf16()) || stem_bf16_;
      float_result_bytes_ = own_writes_bf16 ? 0 : static_cast<size_t>(g_.n * g_.oc * g_.oh * g_.ow) * sizeof(float);
      dst_bf16_ = true;
    }
    // A bf16 residual operand read by a kernel other than our Winograd (a plan that is not
    // channels-last): widened to float32 after everything else in scratch, before each run.
    if (sum_bf16_ && !own_wino_) {
      float_sum_at_ = (scratch_bytes() + 63) / 64 * 64;
      float_sum_bytes_ = static_cast<size_t>(g_.n * g_.oc * g_.oh * g_.ow) * sizeof(float);
    }
    return ok();
  }

 private:
  Status init_float(const OpContext& ctx) {
    // A bf16 source (keep_bf16_tensors, precision.h: a Bf16Concat or a convolution wrote it), read as it is.
    src_bf16_ = ctx.inputs[0].dtype == DType::kBFloat16 && !float32_only_;
    if (ctx.inputs[0].dtype != DType::kFloat32 && !src_bf16_)
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 is supported");
    if (ctx.inputs[1].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 weights are supported");
    SD_TRY(ops::same_dtype(ctx, {2}, 1));  // bias
    // A fused sum's operand: float32, or bf16 under --precision bf16 (keep_bf16_tensors: a residual
    // read by our Winograd; any other kernel reads it converted to float32 in scratch).
    sum_bf16_ = ops::has_input(ctx, 3) && ctx.inputs[3].dtype == DType::kBFloat16 && !float32_only_;
    if (ops::has_input(ctx, 3) && ctx.inputs[3].dtype != DType::kFloat32 && !sum_bf16_)
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": the residual operand must be float32");
    SD_ASSIGN_OR_RETURN(g_, conv_geometry(ctx));
    if (!ctx.constants[1]) return fail(ErrorCode::kUnsupported, ctx.describe() + ": weights must be constant");
    if (ops::has_input(ctx, 2) && !ctx.constants[2]) return fail(ErrorCode::kUnsupported, ctx.describe() + ": bias must be constant");
    const auto& a = ctx.node.attrs;
    src_nhwc_ = a.get_int(kSrcNhwc, 0) != 0;
    dst_nhwc_ = a.get_int(kDstNhwc, 0) != 0;
    // --precision bf16 (the loader marked the node): a direct convolution with bf16 source and
    // weights, float32 accumulation, result, bias and post ops. Depthwise layers stay float32:
    // they are memory-bound, and converting their source would cost more than bf16 saves.
    bf16_ = (a.get_int(kBf16Compute, 0) != 0 && g_.group == 1 && !float32_only_) || src_bf16_;
    auto& eng = cpu_engine();
    memory::dims src_d{g_.n, g_.c, g_.h, g_.w}, dst_d{g_.n, g_.oc, g_.oh, g_.ow};
    memory::dims wei_d = g_.group > 1 ? memory::dims{g_.group, g_.oc / g_.group, g_.c / g_.group, g_.kh, g_.kw}
                                      : memory::dims{g_.oc, g_.c, g_.kh, g_.kw};
    memory::desc src_md(src_d, dt::f32, src_nhwc_ ? tag::nhwc : tag::nchw);
    memory::desc dst_md(dst_d, dt::f32, dst_nhwc_ ? tag::nhwc : tag::nchw);
    memory::desc wei_any(wei_d, dt::f32, tag::any);
    memory::desc bias_md({g_.oc}, dt::f32, tag::a);
    has_bias_ = ops::has_input(ctx, 2);

    SD_ASSIGN_OR_RETURN(post_, ops::post_ops(ctx));
    const auto choice = static_cast<Conv3x3Choice>(a.get_int(kConv3x3Choice, static_cast<int64_t>(Conv3x3Choice::kMeasured)));
    // A strided destination (the planner's Concat in place, layout_attrs.h): only our Winograd
    // writes one (its output transform stores each pixel's channels where it is told), and only
    // where the planner names it (the kernel the node had, not timed again).
    dst_stride_ = a.get_int(kDstPixelStride, 0);
    if (dst_stride_ == g_.oc) dst_stride_ = 0;
    // A strided source or residual operand (a Split's part left in its input, exec/plan_concat.cpp):
    // only our Winograd reads one (its input transform loads each pixel's channels where it is
    // told); F(4x4) and F(6x6) timed against each other, oneDNN's primitive not a candidate.
    src_stride_ = a.get_int(kSrcPixelStride, 0);
    if (src_stride_ == g_.c) src_stride_ = 0;
    sum_stride_ = a.get_int(kSumPixelStride, 0);
    if (sum_stride_ == g_.oc) sum_stride_ = 0;
    // A source in parts (kSrcParts: a Concat along the channels read from its inputs, no copy;
    // exec/plan_concat.cpp): our 1x1 kernel, forced: float32, or its bf16 variant on bf16 parts.
    if (const auto parts = a.get_ints(kSrcParts); !parts.empty()) {
      const bool bf16_parts = bf16_ && src_bf16_ && own_pointwise_bf16_applies(/*strided=*/true);
      if (!(own_pointwise_applies() || bf16_parts) || parts.size() % 3 != 0 || parts.size() / 3 > static_cast<size_t>(ops::pointwise::kMaxParts) ||
          (dst_stride_ != 0 && dst_stride_ < g_.oc) || (sum_stride_ != 0 && sum_stride_ < g_.oc))
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": a source in parts only for our float32 1x1 kernel");
      int64_t channels = 0;
      for (size_t k = 0; k < parts.size(); k += 3) {
        const int64_t up = parts[k + 2];
        if (parts[k] < 1 || parts[k + 1] < parts[k] || (up != 1 && up != 2) || g_.oh % up != 0 || g_.ow % up != 0 ||
            (bf16_parts && parts[k] % 2 != 0))
          return fail(ErrorCode::kInternal, ctx.describe() + ": a source part wider than its stride, or upsampled other than 2x");
        parts_.push_back({nullptr, parts[k], parts[k + 1], up, g_.oh, g_.ow});
        channels += parts[k];
      }
      if (channels != g_.c) return fail(ErrorCode::kInternal, ctx.describe() + ": the source's parts do not add up to its channels");
      take_own_pointwise(make_own_pointwise(ctx, bf16_parts));
      return ok();
    }
    // --precision bf16 on a 3x3 stride-1 layer our AVX-512 Winograd takes: ours, reading and writing
    // bf16 tensors where keep_bf16_tensors kept them (strided too), its float32 inputs rounded to
    // bf16 as read (the same bytes either way).
    if (bf16_winograd_node(choice)) {
      if ((src_stride_ != 0 && src_stride_ < g_.c) || (dst_stride_ != 0 && dst_stride_ < g_.oc) || (sum_stride_ != 0 && sum_stride_ < g_.oc))
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": a pixel stride narrower than the channels");
      take_bf16_winograd(ctx, choice);
      return ok();
    }
    // The bf16 1x1 kernel on a bf16 source read or written strided (a Split's part, a Concat's rows):
    // oneDNN's cannot, so ours, forced.
    if (bf16_ && src_bf16_ && (src_stride_ != 0 || dst_stride_ != 0 || sum_stride_ != 0) && choice != Conv3x3Choice::kOneDnn &&
        own_pointwise_bf16_applies(/*strided=*/true)) {
      if ((src_stride_ != 0 && src_stride_ < g_.c) || (dst_stride_ != 0 && dst_stride_ < g_.oc) || (sum_stride_ != 0 && sum_stride_ < g_.oc))
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": a pixel stride narrower than the channels");
      take_own_pointwise(make_own_pointwise(ctx, /*bf16=*/true));
      return ok();
    }
    // Our 1x1 kernel: forced (kPointwise, or our kernels wherever they apply: kWinograd, kWinograd6x6)
    // or timed against oneDNN's below. It reads and writes strided tensors too (the planner names it).
    if (own_pointwise_applies() && (choice == Conv3x3Choice::kPointwise || choice == Conv3x3Choice::kWinograd ||
                                    choice == Conv3x3Choice::kWinograd6x6)) {
      if ((src_stride_ != 0 && src_stride_ < g_.c) || (dst_stride_ != 0 && dst_stride_ < g_.oc) || (sum_stride_ != 0 && sum_stride_ < g_.oc))
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": a pixel stride narrower than the channels");
      take_own_pointwise(make_own_pointwise(ctx));
      return ok();
    }
    if (src_stride_ != 0 || sum_stride_ != 0) {
      if (!own_winograd_applies() || src_bf16_ || bf16_ || (src_stride_ != 0 && src_stride_ < g_.c) || (sum_stride_ != 0 && sum_stride_ < g_.oc) ||
          (dst_stride_ != 0 && dst_stride_ < g_.oc))
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": a strided source or sum only for our float32 Winograd kernel");
      if (choice == Conv3x3Choice::kWinograd || choice == Conv3x3Choice::kWinograd6x6)
        take_own_winograd(make_own_winograd(ctx, ops::WinoGemm::kFloat32,
                                            choice == Conv3x3Choice::kWinograd6x6 ? ops::WinoTile::k6x6 : ops::WinoTile::k4x4));
      else
        take_own_winograd_if_faster(ctx, /*against_onednn=*/false);
      return ok();
    }
    // A bf16 source goes to oneDNN's bf16 convolution alone (keep_bf16_tensors picked nodes that
    // neither our Winograd nor the stem kernel takes, and float32 would need it converted back).
    if (!src_bf16_ && try_stem(ctx)) return ok();
    // Our Winograd (winograd_conv.h, AVX2 or AVX-512, and its bf16 variant under --precision bf16
    // where the processor has AVX512_BF16): forced by the loader's option, or timed against
    // oneDNN's primitive (its Winograd or direct kernel, or its bf16 direct kernel) once that is built.
    const bool own_fits = own_winograd_applies() && !src_bf16_;
    const bool forced_own = choice == Conv3x3Choice::kWinograd || choice == Conv3x3Choice::kWinograd6x6;
    if (dst_stride_ != 0 && (!own_fits || !forced_own || bf16_ || dst_stride_ < g_.oc))
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": a strided destination only for our float32 Winograd kernel");
    if (own_fits && forced_own) {
      auto own = make_own_winograd(ctx, bf16_ ? ops::WinoGemm::kBf16 : ops::WinoGemm::kFloat32,
                                   choice == Conv3x3Choice::kWinograd6x6 ? ops::WinoTile::k6x6 : ops::WinoTile::k4x4);
      own->round_inputs_to_bf16(bf16_);
      take_own_winograd(std::move(own));
      return ok();
    }
    const bool timed = own_fits && choice == Conv3x3Choice::kMeasured && cpu::active_isa() >= cpu::Isa::kAvx2;
    if (!bf16_ && try_winograd(ctx, wei_d, bias_md)) {
      if (timed) take_own_winograd_if_faster(ctx);
      return ok();
    }

    // oneDNN's swish and logistic post ops cost ~0.5 ns an element here, more than the
    // convolution proper on the narrow layers; with one of them in the chain, the whole chain
    // runs in our own pass over the output instead (activation_kernels.h, ~0.2 ns an element).
    own_post_ = std::any_of(post_.begin(), post_.end(), [](const PostOp& p) { return is_exp_activation(p.kind); });
    dnnl::post_ops po;
    for (size_t i = 0; i < post_.size() && !own_post_; ++i) {
      if (post_[i].kind == PostKind::kSum) {
        sum_index_ = static_cast<int>(i);
        po.append_binary(dnnl::algorithm::binary_add, dst_md);
        continue;
      }
      float alpha = 0, beta = 0;
      const dnnl::algorithm alg = eltwise_for(post_[i], alpha, beta);
      po.append_eltwise(1.f, alg, alpha, beta);
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    auto make_pd = [&](dt type) {
      const memory::desc src_t(src_d, type, src_nhwc_ ? tag::nhwc : tag::nchw), wei_t(wei_d, type, tag::any);
      auto desc = has_bias_ ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                               src_t, wei_t, bias_md, dst_md, {g_.sh, g_.sw}, {g_.dh - 1, g_.dw - 1},
                                                               {g_.pt, g_.pl}, {g_.pb, g_.pr})
                            : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                               src_t, wei_t, dst_md, {g_.sh, g_.sw}, {g_.dh - 1, g_.dw - 1},
                                                               {g_.pt, g_.pl}, {g_.pb, g_.pr});
      return dnnl::convolution_forward::primitive_desc(desc, with_user_scratchpad(attr), eng);
    };
    if (bf16_) {
      try {
        pd_ = make_pd(dt::bf16);
      } catch (const dnnl::error& e) {
        if (src_bf16_) return fail(ErrorCode::kUnsupported, ctx.describe() + ": oneDNN has no bf16 convolution for its bf16 source (" + e.what() + ")");
        bf16_ = false;  // no bf16 kernel for this case (shape, post ops): float32 as without the option
      }
    }
    if (!bf16_) {
      try {
        pd_ = make_pd(dt::f32);
      } catch (const dnnl::error& e) {
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": oneDNN has no convolution for this case (" + e.what() + ")");
      }
    }
    conv_ = dnnl::convolution_forward(pd_);
    // Weights: reordered once into the primitive's format, converted to bf16 with --precision bf16
    // (and shared with other sessions).
    weights_ = shared_weights(*ctx.constants[1], {wei_d, dt::f32, g_.group > 1 ? tag::goihw : tag::oihw}, pd_.weights_desc());
    if (has_bias_) {
      bias_ = memory(bias_md, eng);
      std::memcpy(bias_.get_data_handle(), ctx.constants[2]->data(), static_cast<size_t>(g_.oc) * sizeof(float));
    }
    src_ = memory(src_bf16_ ? pd_.src_desc() : src_md, eng, nullptr);
    dst_ = memory(dst_md, eng, nullptr);
    if (sum_index_ >= 0) sum_ = memory(dst_md, eng, nullptr);
    impl_ = pd_.impl_info_str();
    args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, *weights_}, {DNNL_ARG_DST, dst_}};
    if (has_bias_) args_.emplace(DNNL_ARG_BIAS, bias_);
    if (sum_index_ >= 0) args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(sum_index_) | DNNL_ARG_SRC_1, sum_);
    size_t pads_at = 0;
    if (src_bf16_) impl_ += " (bf16) on bf16";  // its source needs no conversion
    if (bf16_ && !src_bf16_) {
      // The float32 source converted to bf16 into the front of the scratch before each run; the
      // conversion's and the convolution's scratchpads share the space after it.
      bf16_src_ = memory(pd_.src_desc(), eng, nullptr);
      bf16_src_bytes_ = (pd_.src_desc().get_size() + 63) / 64 * 64;
      dnnl::reorder::primitive_desc to_pd(eng, src_md, eng, pd_.src_desc(), with_user_scratchpad());
      to_blocked_ = dnnl::reorder(to_pd);
      to_args_ = {{DNNL_ARG_FROM, src_}, {DNNL_ARG_TO, bf16_src_}};
      args_[DNNL_ARG_SRC] = bf16_src_;
      pads_at = bf16_src_bytes_;
      to_scratchpad_.init(to_pd.scratchpad_desc(), pads_at, to_args_);
      impl_ += " (bf16)";
    }
    scratchpad_.init(pd_.scratchpad_desc(), pads_at, args_);
    stream_ = dnnl::stream(eng);
    if (timed) take_own_winograd_if_faster(ctx);
    if (own_pointwise_applies() && choice == Conv3x3Choice::kMeasured) take_own_pointwise_if_faster(ctx);
    // bf16 compute (a bf16 source tensor, or a float32 one converted as oneDNN's bf16 convolution
    // converts it): our 1x1 kernel's bf16 variant, forced as above or timed against oneDNN's.
    // (own_pointwise_bf16_applies checked everything the variant needs: it is the one made.)
    if (own_pointwise_bf16_applies() && choice != Conv3x3Choice::kOneDnn) {
      auto own = make_own_pointwise(ctx, /*bf16=*/true);
      if (choice == Conv3x3Choice::kMeasured)
        take_own_pointwise_if_faster(ctx, std::move(own));
      else
        take_own_pointwise(std::move(own));
    }
    if (bf16_ && !own_wino_ && !src_bf16_) take_float32_if_chosen(ctx);
    return ok();
  }

 public:
  // Winograd: [blocked source | blocked result | oneDNN's scratchpads]; direct: oneDNN's scratchpad;
  // bf16: [bf16 source | the conversion's or the convolution's scratchpad]; a bf16 result: the
  // above, then the float32 result (unless our Winograd writes bf16 itself).
  size_t scratch_bytes() const override {
    const size_t kernel = float32_ ? float32_->scratch_bytes() : std::max({scratchpad_.end(), to_scratchpad_.end(), from_scratchpad_.end()});
    const size_t with_result = dst_bf16_ ? float_result_at_ + float_result_bytes_ : kernel;
    return float_sum_bytes_ != 0 ? float_sum_at_ + float_sum_bytes_ : with_result;
  }

  std::string implementation() const override {
    return (float32_ ? float32_->implementation() : impl_) + (dst_bf16_ ? ", bf16 result" : "");
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    std::vector<TensorRef> widened;
    if (sum_bf16_ && !own_wino_) {  // a bf16 residual operand for a kernel that reads float32 (see init)
      widened.assign(in.begin(), in.end());
      float* s = reinterpret_cast<float*>(ctx.scratch + float_sum_at_);
      const uint16_t* b = in[3].as<uint16_t>();
      parallel_for(in[3].numel(), ctx.threads, 16384, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) s[i] = ops::bf16_to_float(b[i]);
      });
      widened[3].dtype = DType::kFloat32;
      widened[3].data = s;
      in = widened;
    }
    if (stem_bf16_) {  // writes float32 or bf16 itself
      stem_bf16_->run(in[0].as<float>(), dst_bf16_ ? nullptr : out[0].as<float>(), dst_bf16_ ? out[0].as<uint16_t>() : nullptr, ctx.threads);
      return ok();
    }
    if (!dst_bf16_) return run_float(in, out, ctx, {}, nullptr);
    TensorRef result = out[0];
    result.dtype = DType::kFloat32;
    result.data = ctx.scratch + float_result_at_;
    const float* r = result.as<float>();
    uint16_t* y = out[0].as<uint16_t>();
    return run_float(in, std::span<const TensorRef>(&result, 1), ctx,
                     [=](int64_t b, int64_t e) { ops::floats_to_bf16_rows(r + b, 0, y + b, 0, 1, static_cast<size_t>(e - b)); }, y);
  }

 private:
  // Called on [b, e) of the float32 result once final (post ops applied), from any thread.
  using Finish = std::function<void(int64_t, int64_t)>;

  void finish_all(const TensorRef& out, int threads, const Finish& finish) const {
    if (finish) parallel_for(out.numel(), threads, 16384, [&](int64_t b, int64_t e) { finish(b, e); });
  }

  // `finish` and `bf16_out` (the bf16 result) only for a result kept bf16; a kernel that can write
  // bf16 itself (our AVX-512 Winograd's epilogue) writes bf16_out directly, no finish.
  Status run_float(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx, const Finish& finish,
                   uint16_t* bf16_out) {
    if (float32_) {
      SD_TRY(float32_->run(in, out, ctx));
      finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    if (stem_) {
      float* y = out[0].as<float>();
      const float* sum = sum_input(in);
      const bool post = !post_.empty() && !stem_fused_post_;
      stem_->run(in[0].as<float>(), src_nhwc_, y, ctx.threads,
                 !post && !finish ? std::function<void(float*, int64_t)>{} : [&](float* rows, int64_t count) {
                   if (post) apply_post_ops(y, sum, rows - y, rows - y + count);
                   if (finish) finish(rows - y, rows - y + count);
                 });
      return ok();
    }
    if (own_pw_ && own_pw_->bf16() && !parts_.empty()) {  // a bf16 source in parts (source_parts)
      const auto at = source_parts(in);
      own_pw_->run_bf16_parts(std::span<const ops::SrcPart>(at.data(), parts_.size()), bf16_out ? nullptr : out[0].as<float>(), bf16_out,
                              sum_input(in), ctx.threads, {0, dst_stride_, sum_stride_});
      if (!bf16_out) finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    if (own_pw_ && own_pw_->bf16()) {  // the result kept bf16 written as such
      const uint16_t* src = in[0].as<uint16_t>();
      if (!src_bf16_) {  // a float32 source: converted into the front of the scratch (as for oneDNN's)
        src_.set_data_handle(in[0].data);
        bf16_src_.set_data_handle(ctx.scratch);
        to_scratchpad_.bind(ctx.scratch);
        to_blocked_.execute(stream_, to_args_);
        src = reinterpret_cast<const uint16_t*>(ctx.scratch);
      }
      own_pw_->run_bf16(src, bf16_out ? nullptr : out[0].as<float>(), bf16_out, sum_input(in), ctx.threads,
                        {src_stride_, dst_stride_, sum_stride_});
      if (!bf16_out) finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    if (own_pw_ && !parts_.empty()) {  // a source in parts (source_parts)
      const auto at = source_parts(in);
      own_pw_->run_parts(std::span<const ops::SrcPart>(at.data(), parts_.size()), out[0].as<float>(), sum_input(in), ctx.threads,
                         {0, dst_stride_, sum_stride_});
      finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    if (own_pw_) {
      own_pw_->run(in[0].as<float>(), out[0].as<float>(), sum_input(in), ctx.threads, {src_stride_, dst_stride_, sum_stride_});
      finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    if (own_wino_) {
      ops::WinoIo io;
      if (src_bf16_)
        io.src_bf16 = in[0].as<uint16_t>();
      else
        io.src = in[0].as<float>();
      if (sum_bf16_)
        io.sum_bf16 = in[3].as<uint16_t>();
      else
        io.sum = sum_input(in);
      if (bf16_out && own_wino_->writes_bf16())
        io.dst_bf16 = bf16_out;
      else
        io.dst = out[0].as<float>();
      own_wino_->run(io, ctx.threads, {src_stride_, dst_stride_, sum_stride_});
      if (!io.dst_bf16) finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    if (wino_) {
      SD_TRY(run_winograd(in, out, ctx));
      finish_all(out[0], ctx.threads, finish);
      return ok();
    }
    src_.set_data_handle(in[0].data);
    dst_.set_data_handle(out[0].data);
    if (sum_index_ >= 0) sum_.set_data_handle(in[3].data);
    scratchpad_.bind(ctx.scratch);
    if (bf16_ && !src_bf16_) {
      bf16_src_.set_data_handle(ctx.scratch);
      to_scratchpad_.bind(ctx.scratch);
      to_blocked_.execute(stream_, to_args_);
    }
    conv_.execute(stream_, args_);  // the map holds handles to the same memory objects
    if (own_post_)
      apply_post_ops_to_all(in, out[0], ctx.threads, finish);
    else
      finish_all(out[0], ctx.threads, finish);
    return ok();
  }

  // Images (1 to 4 channels) into 8 or more channels, and 8 -> 8 channel 3x3 layers, written
  // channels-last: stem_conv.h says why. (Weights and bias are float32 like the input: init checked.)
  bool try_stem(const OpContext& ctx) {
    if (!dst_nhwc_) return false;
    if (!ops::stem_conv_applies(g_.c, g_.oc, g_.kh, g_.kw, src_nhwc_, ctx.node.attrs)) return false;
    const ops::StemConvGeometry sg{g_.n, g_.c, g_.h, g_.w, g_.oc, g_.kh, g_.kw, g_.oh, g_.ow, g_.sh, g_.sw, g_.pt, g_.pl};
    // --precision bf16: bf16 products where the processor has them (stem_conv_bf16.h).
    if (auto posts = wino_posts(); bf16_ && ops::StemConvBf16::applies(sg, src_nhwc_, posts)) {
      stem_bf16_ = std::make_unique<ops::StemConvBf16>(sg, static_cast<const float*>(ctx.constants[1]->data()),
                                                       has_bias_ ? static_cast<const float*>(ctx.constants[2]->data()) : nullptr, std::move(posts));
      impl_ = stem_bf16_->name();
      return true;
    }
    // A single cheap activation runs in registers; SiLU, sigmoid and longer chains run over each
    // finished row (apply_post_ops).
    ops::StemActivation act = ops::StemActivation::kNone;
    float alpha = 0, beta = 0;
    if (post_.size() == 1 && stem_activation_for(post_[0].kind) != ops::StemActivation::kNone) {
      act = stem_activation_for(post_[0].kind), alpha = post_[0].alpha, beta = post_[0].beta;
      stem_fused_post_ = true;
    }
    stem_ = std::make_unique<ops::StemConv>(sg, static_cast<const float*>(ctx.constants[1]->data()),
                                            has_bias_ ? static_cast<const float*>(ctx.constants[2]->data()) : nullptr, act, alpha, beta);
    impl_ = "streamdet:stem_direct";
    return true;
  }

  // F(6x6, 3x3) is timed only on maps this large (YOLOv8n at 640: the 80x80 and 160x160 layers).
  // On smaller ones it loses in the model even where it wins this timing: at 20x20 its tiles
  // overhang by 20% and it is slower here too; at 40x40 it times within a few % of F(4x4) here,
  // where the layer is run again and again with its transformed weights warm in cache, but ran
  // up to 18% slower in the model, where every layer finds them cold and F(6x6)'s are 64/36 the size
  // (YOLOv8n, 1 thread, --engine-profile 0: docs/benchmarks.md, "Winograd F(6x6, 3x3)").
  static constexpr int64_t kF6x6MinSide = 48;

  // Ours against oneDNN's primitive as built (its Winograd on AVX-512, else its direct kernel;
  // with --precision bf16 its bf16 direct kernel) on this shape; ours runs the node when faster,
  // and oneDNN's primitive, weights and scratchpads are dropped. With --precision bf16 ours is
  // the float32 variant and, where the processor has AVX512_BF16, the bf16 one: the fastest of
  // the three runs (bf16 is never slower here than float32 on these nodes). In float32, where the
  // AVX-512 variant applies, F(6x6, 3x3) is a candidate beside F(4x4, 3x3): fewer multiplications,
  // larger transforms and tiles overhanging the edges, so which wins depends on the shape
  // (docs/benchmarks.md, "Winograd F(6x6, 3x3)"); only on maps of kF6x6MinSide and more.
  // against_onednn false (oneDNN's primitive cannot run the node: a strided source or sum): the
  // fastest of ours.
  void take_own_winograd_if_faster(const OpContext& ctx, bool against_onednn = true) {
    const int threads = static_cast<int>(std::max<int64_t>(1, ctx.node.attrs.get_int(kPlanThreads, 1)));
    std::vector<std::unique_ptr<ops::WinogradConv>> own;
    own.push_back(make_own_winograd(ctx, ops::WinoGemm::kFloat32));
    const bool large = g_.h >= kF6x6MinSide && g_.w >= kF6x6MinSide;
    if (large) own.push_back(make_own_winograd(ctx, ops::WinoGemm::kFloat32, ops::WinoTile::k6x6));
    if (bf16_) {
      auto b = make_own_winograd(ctx, ops::WinoGemm::kBf16);
      if (b->bf16()) own.push_back(std::move(b));
      if (large) {
        auto b6 = make_own_winograd(ctx, ops::WinoGemm::kBf16, ops::WinoTile::k6x6);
        if (b6->bf16()) own.push_back(std::move(b6));
      }
    }
    // Under --precision bf16 each rounds its float32 inputs to bf16 (as a bf16 tensor holds them).
    if (bf16_)
      for (auto& o : own) o->round_inputs_to_bf16(true);
    const int best = own.size() == 1 && !against_onednn ? 0 : fastest_own(ctx, own, threads, against_onednn);
    if (best < 0) return;
    take_own_winograd(std::move(own[static_cast<size_t>(best)]));
  }

  // `own` runs the node; oneDNN's primitive (if built), weights and scratchpads are dropped.
  void take_own_winograd(std::unique_ptr<ops::WinogradConv> own) {
    own_wino_ = std::move(own);
    impl_ = own_wino_->name();
    if (own_wino_->bf16()) impl_ += " (bf16)";
    conv_ = {};
    weights_.reset();
    args_.clear(), to_args_.clear(), from_args_.clear();
    scratchpad_ = {}, to_scratchpad_ = {}, from_scratchpad_ = {};
    wino_ = false;
  }

  // --precision bf16 (the node marked bf16, group 1) on a 3x3 stride-1 layer our AVX-512 Winograd
  // takes (channels and output channels multiples of 16, channels-last), unless oneDNN is forced:
  // keep_bf16_tensors (precision.h) lets such a layer read its source and residual operand as bf16
  // tensors, and only ours reads a bf16 residual or a strided bf16 tensor. oneDNN 2.6's bf16
  // convolution on these layers is a direct one, slower than ours on every YOLOv8n layer here
  // (docs/benchmarks.md), so it is no candidate.
  bool bf16_winograd_node(Conv3x3Choice choice) const {
    return bf16_ && !float32_only_ && g_.group == 1 && choice != Conv3x3Choice::kOneDnn && own_winograd_applies() && g_.c % 16 == 0 &&
           g_.oc % 16 == 0 && cpu::active_isa() >= cpu::Isa::kAvx512;
  }

  // Our Winograd on such a layer: forced (the tile as the choice says, the GEMM as kWinoGemmChoice
  // says, bf16 where absent), or the fastest of its F(4x4)/F(6x6) and float32/bf16 GEMM variants,
  // each rounding its float32 inputs to bf16.
  void take_bf16_winograd(const OpContext& ctx, Conv3x3Choice choice) {
    if (choice == Conv3x3Choice::kWinograd || choice == Conv3x3Choice::kWinograd6x6) {
      const bool bf16_gemm = ctx.node.attrs.get_int(kWinoGemmChoice, 1) != 0;
      auto own = make_own_winograd(ctx, bf16_gemm ? ops::WinoGemm::kBf16 : ops::WinoGemm::kFloat32,
                                   choice == Conv3x3Choice::kWinograd6x6 ? ops::WinoTile::k6x6 : ops::WinoTile::k4x4);
      own->round_inputs_to_bf16(true);
      take_own_winograd(std::move(own));
      return;
    }
    take_own_winograd_if_faster(ctx, /*against_onednn=*/false);
  }

  // The source's parts (kSrcParts) on this run's tensors: part 0 is input 0, part k input 3 + k;
  // bf16 data for the bf16 variant, else float32.
  std::array<ops::SrcPart, ops::pointwise::kMaxParts> source_parts(std::span<const TensorRef> in) const {
    std::array<ops::SrcPart, ops::pointwise::kMaxParts> at{};
    for (size_t k = 0; k < parts_.size(); ++k) {
      at[k] = parts_[k];
      const TensorRef& t = in[k == 0 ? 0 : 3 + k];
      if (own_pw_->bf16())
        at[k].src_bf16 = t.as<uint16_t>();
      else
        at[k].src = t.as<float>();
    }
    return at;
  }

  // Our 1x1 kernel takes this node: its shapes, float32 channels-last on both sides, AVX2 + FMA.
  bool own_pointwise_applies() const {
    return src_nhwc_ && dst_nhwc_ && !bf16_ && !src_bf16_ &&
           ops::PointwiseConv::applies(g_.c, g_.oc, g_.kh, g_.kw, g_.sh, g_.sw, g_.group, g_.pt, g_.pl, g_.pb, g_.pr);
  }

  // ... and its bf16 variant under --precision bf16 (on a bf16 source tensor, keep_bf16_tensors,
  // or on the float32 source converted as oneDNN's bf16 convolution reads it). strided: on a bf16
  // source with any pixel strides (they are checked by the caller), else dense only.
  bool own_pointwise_bf16_applies(bool strided = false) const {
    return bf16_ && (strided ? src_bf16_ && !sum_bf16_ : (src_bf16_ || to_blocked_) && src_stride_ == 0 && dst_stride_ == 0 && sum_stride_ == 0) &&
           src_nhwc_ && dst_nhwc_ &&
           cpu::active_isa() >= cpu::Isa::kAvx512Bf16 && g_.c % 2 == 0 && g_.oc % 16 == 0 &&
           ops::PointwiseConv::applies(g_.c, g_.oc, g_.kh, g_.kw, g_.sh, g_.sw, g_.group, g_.pt, g_.pl, g_.pb, g_.pr);
  }

  std::unique_ptr<ops::PointwiseConv> make_own_pointwise(const OpContext& ctx, bool bf16 = false) const {
    return std::make_unique<ops::PointwiseConv>(ops::PointwiseGeometry{g_.n * g_.oh * g_.ow, g_.c, g_.oc},
                                                static_cast<const float*>(ctx.constants[1]->data()),
                                                has_bias_ ? static_cast<const float*>(ctx.constants[2]->data()) : nullptr, wino_posts(),
                                                cpu::active_isa(), bf16);
  }

  // Ours against oneDNN's primitive as built (with our pass for SiLU and sigmoid), timed on this
  // shape with the session's threads and remembered per shape (as fastest_own). Ours is the
  // incumbent: oneDNN's replaces it only when 5% faster in every round. Where the two tie (the
  // multiply-adds bound both), ours is worth more in the model than alone: it can write into a
  // Concat's rows (exec/plan_concat.cpp), and a tie left to the noise flipped from load to load.
  // `own` given: that one (the bf16 variant: on a bf16 source the made-up float data is read as
  // bf16 pairs, which times the same). Each candidate runs as run() runs it (a float32 source's
  // conversion to bf16 included).
  void take_own_pointwise_if_faster(const OpContext& ctx, std::unique_ptr<ops::PointwiseConv> own = nullptr) {
    const int threads = static_cast<int>(std::max<int64_t>(1, ctx.node.attrs.get_int(kPlanThreads, 1)));
    if (!own) own = make_own_pointwise(ctx);
    constexpr TimingRule kOursUnlessClearlySlower{0.8, 0.95, true, 0.0};
    const size_t best = remembered_choice(std::string("pointwise,") + own->name() + "," + shape_key(threads) + (src_bf16_ ? ",bf16 source" : ""), [&] {
      return time_on_made_up_data(
          ctx, threads, 2, scratch_bytes(),
          [&](size_t i, std::span<const TensorRef> in, const TensorRef& out, const ExecContext& ec) {
            if (i == 0) own_pw_ = std::move(own);  // run() runs ours while own_pw_ holds it
            (void)run(in, std::span<const TensorRef>(&out, 1), ec);
            if (i == 0) own = std::move(own_pw_);
          },
          kOursUnlessClearlySlower);
    });
    if (best == 0) take_own_pointwise(std::move(own));
  }

  // `own` runs the node; oneDNN's primitive, weights and scratchpads are dropped.
  void take_own_pointwise(std::unique_ptr<ops::PointwiseConv> own) {
    own_pw_ = std::move(own);
    impl_ = own_pw_->name();
    const bool converts = own_pw_->bf16() && !src_bf16_;  // keeps oneDNN's float32 -> bf16 reorder of the source
    if (own_pw_->bf16()) impl_ += src_bf16_ ? " (bf16) on bf16" : " (bf16)";
    conv_ = {};
    pd_ = {};
    weights_.reset();
    args_.clear(), from_args_.clear();
    scratchpad_ = {}, from_scratchpad_ = {};
    if (!converts) to_args_.clear(), to_scratchpad_ = {}, to_blocked_ = {}, bf16_src_ = {};
    own_post_ = false;
  }

  // Our Winograd kernel takes this node: its shapes, channels-last on both sides, AVX2 + FMA.
  bool own_winograd_applies() const {
    return src_nhwc_ && dst_nhwc_ && cpu::detected_isa() >= cpu::Isa::kAvx2 &&
           ops::WinogradConv::applies(g_.c, g_.oc, g_.kh, g_.kw, g_.sh, g_.sw, g_.dh, g_.dw, g_.group, g_.pt, g_.pl, g_.pb, g_.pr);
  }

  std::unique_ptr<ops::WinogradConv> make_own_winograd(const OpContext& ctx, ops::WinoGemm gemm,
                                                       ops::WinoTile tile = ops::WinoTile::k4x4) const {
    return std::make_unique<ops::WinogradConv>(ops::WinogradGeometry{g_.n, g_.c, g_.h, g_.w, g_.oc},
                                               static_cast<const float*>(ctx.constants[1]->data()),
                                               has_bias_ ? static_cast<const float*>(ctx.constants[2]->data()) : nullptr, wino_posts(),
                                               cpu::active_isa(), gemm, tile);
  }

  // The node's post ops as our kernels' epilogues take them.
  std::vector<ops::WinoPost> wino_posts() const {
    std::vector<ops::WinoPost> posts;
    for (const PostOp& p : post_) {
      ops::WinoPostKind k = ops::WinoPostKind::kRelu;
      switch (p.kind) {
        case PostKind::kRelu: k = ops::WinoPostKind::kRelu; break;
        case PostKind::kLeakyRelu: k = ops::WinoPostKind::kLeakyRelu; break;
        case PostKind::kSilu: k = ops::WinoPostKind::kSilu; break;
        case PostKind::kSigmoid: k = ops::WinoPostKind::kSigmoid; break;
        case PostKind::kHardSwish: k = ops::WinoPostKind::kHardSwish; break;
        case PostKind::kClip: k = ops::WinoPostKind::kClip; break;
        case PostKind::kSum: k = ops::WinoPostKind::kSum; break;
      }
      posts.push_back({k, p.alpha, p.beta});
    }
    return posts;
  }

  // Times oneDNN's primitive (as run() runs it) and each of `own` on this node's shape with the
  // session's threads (time_on_made_up_data). Costs a few ms a node at load; they differ by far
  // more than the noise where it matters (docs/benchmarks.md). Returns the index in `own` of the
  // fastest, or -1 when oneDNN's is. The answer is kept per shape, post ops, threads and precision
  // for the process (remembered_choice): YOLOv8n's 32 eligible layers have 18 shapes.
  int fastest_own(const OpContext& ctx, const std::vector<std::unique_ptr<ops::WinogradConv>>& own, int threads, bool against_onednn) {
    std::string key = (against_onednn ? "wino," : "wino_own,") + shape_key(threads);
    if (bf16_) key += ",bf16";
    for (const auto& o : own) key += std::string(",") + o->name();  // the answer is an index into `own`
    const size_t first = against_onednn ? 1 : 0;
    const size_t best = remembered_choice(key, [&] {
      // With oneDNN: candidate 0 is its primitive, i + 1 is own[i].
      return time_on_made_up_data(ctx, threads, own.size() + first, scratch_bytes(),
                                  [&](size_t i, std::span<const TensorRef> in, const TensorRef& out, const ExecContext& ec) {
                                    if (i < first)
                                      (void)run(in, std::span<const TensorRef>(&out, 1), ec);
                                    else
                                      own[i - first]->run(in[0].as<float>(), out.as<float>(), sum_input(in), threads);
                                  });
    });
    return static_cast<int>(best) - static_cast<int>(first);
  }

  // The node's shape, post ops, threads and ISA, for remembered_choice's keys.
  std::string shape_key(int threads) const {
    std::string key = geometry_key(g_, threads);
    key += "," + std::to_string(has_bias_) + "," + std::to_string(src_nhwc_) + std::to_string(dst_nhwc_) + "," +
           cpu::isa_name(cpu::active_isa());
    for (const PostOp& p : post_) key += "," + std::to_string(static_cast<int>(p.kind));
    return key;
  }

  using CandidateRun = std::function<void(size_t, std::span<const TensorRef>, const TensorRef&, const ExecContext&)>;

  // fastest_candidate (timed_choice.h) over `count` candidates, each run as run(i, in, out, ctx)
  // on made-up float data of this node's shapes with `scratch` bytes of scratch.
  size_t time_on_made_up_data(const OpContext& ctx, int threads, size_t count, size_t scratch_size, const CandidateRun& run_candidate,
                              TimingRule rule = {}) const {
    const Shape src_shape{g_.n, g_.h, g_.w, g_.c}, dst_shape{g_.n, g_.oh, g_.ow, g_.oc};
    HostTensor src(DType::kFloat32, src_shape), dst(DType::kFloat32, dst_shape), sum(DType::kFloat32, dst_shape);
    float* x = static_cast<float*>(src.data());
    for (int64_t i = 0; i < src.numel(); ++i) x[i] = static_cast<float>(i % 17) * 0.0625f - 0.5f;
    std::vector<TensorRef> in(ctx.inputs.size());
    in[0] = src.ref();
    if (in.size() > 3) in[3] = sum.ref();
    const TensorRef out = dst.ref();
    HostTensor scratch(DType::kUInt8, Shape{static_cast<int64_t>(std::max<size_t>(64, scratch_size))});
    ExecContext ec;
    ec.threads = threads;
    ec.scratch = static_cast<unsigned char*>(scratch.data());
    return fastest_candidate(count, [&](size_t i) { run_candidate(i, in, out, ec); }, rule);
  }

  // --precision bf16 on a node that oneDNN's bf16 convolution runs (1x1, stride-2 3x3, and 3x3
  // stride-1 where it beat our Winograd): oneDNN's float32 convolution of the node is a candidate
  // too (kConvCandidate 1, a ConvKernel built without bf16 that then runs the node). On YOLOv8n's
  // 1x1 layers the float32 -> bf16 conversion of the source costs more than bf16 saves
  // (docs/benchmarks.md). Float32 is the more accurate, so it is always acceptable under bf16;
  // 5% faster in every round before leaving bf16, which ran these nodes before the timing.
  void take_float32_if_chosen(const OpContext& ctx) {
    const int64_t forced = ctx.node.attrs.get_int(kConvCandidate, kTimedCandidate);
    if (forced == 0) return;
    std::unique_ptr<ConvKernel> f32;
    auto make_f32 = [&] {
      f32 = std::make_unique<ConvKernel>();
      f32->float32_only_ = true;
      if (!f32->init(ctx)) f32.reset();  // no float32 convolution for this case: bf16 as before
      return f32 != nullptr;
    };
    size_t pick = 1;
    if (forced == kTimedCandidate) {
      const int threads = static_cast<int>(std::max<int64_t>(1, ctx.node.attrs.get_int(kPlanThreads, 1)));
      pick = remembered_choice("bf16|f32," + shape_key(threads) + "," + impl_, [&]() -> size_t {
        if (!make_f32()) return 0;
        return time_on_made_up_data(ctx, threads, 2, std::max(scratch_bytes(), f32->scratch_bytes()),
                                    [&](size_t i, std::span<const TensorRef> in, const TensorRef& out, const ExecContext& ec) {
                                      (void)(i == 0 ? run(in, std::span<const TensorRef>(&out, 1), ec)
                                                    : f32->run(in, std::span<const TensorRef>(&out, 1), ec));
                                    },
                                    kCautiousRule);
      });
    }
    if (pick == 0 || (!f32 && !make_f32())) return;
    float32_ = std::move(f32);  // it runs the node; this one's oneDNN primitive and weights go
    own_pw_.reset();
    conv_ = {};
    pd_ = {};
    weights_.reset();
    args_.clear(), to_args_.clear(), from_args_.clear();
    scratchpad_ = {}, to_scratchpad_ = {}, from_scratchpad_ = {};
    to_blocked_ = {};
    bf16_src_ = {};
    bf16_ = false;
  }

  // Winograd F(4x4, 3x3) (oneDNN's jit_wino_4x3) for 3x3 stride-1 convolutions: about half the
  // time of the direct kernel on YOLO's shapes (docs/benchmarks.md). It runs on oneDNN's blocked
  // layout only and takes no swish/logistic post ops, so the source is reordered into scratch,
  // the result reordered back to NHWC, and the post ops applied on the way out.
  bool try_winograd(const OpContext& ctx, const memory::dims& wei_d, const memory::desc& bias_md) {
    if (g_.kh != 3 || g_.kw != 3 || g_.sh != 1 || g_.sw != 1 || g_.dh != 1 || g_.dw != 1 || g_.group != 1) return false;
    if (g_.c % 16 != 0 || g_.oc % 16 != 0 || !src_nhwc_ || !dst_nhwc_) return false;
    if (g_.c < 32 && g_.oc < 32) return false;  // measured: no gain on the narrowest layers
    auto& eng = cpu_engine();
    memory::dims src_d{g_.n, g_.c, g_.h, g_.w}, dst_d{g_.n, g_.oc, g_.oh, g_.ow};
    memory::desc src_any(src_d, dt::f32, tag::any), dst_any(dst_d, dt::f32, tag::any), wei_any(wei_d, dt::f32, tag::any);
    dnnl::convolution_forward::primitive_desc pd;
    try {
      auto d = has_bias_ ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, src_any,
                                                           wei_any, bias_md, dst_any, {1, 1}, {g_.pt, g_.pl}, {g_.pb, g_.pr})
                         : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, src_any,
                                                           wei_any, dst_any, {1, 1}, {g_.pt, g_.pl}, {g_.pb, g_.pr});
      pd = dnnl::convolution_forward::primitive_desc(d, with_user_scratchpad(), eng);
    } catch (const dnnl::error&) {
      return false;
    }
    conv_ = dnnl::convolution_forward(pd);
    weights_ = shared_weights(*ctx.constants[1], {wei_d, dt::f32, tag::oihw}, pd.weights_desc());
    if (has_bias_) {
      bias_ = memory(bias_md, eng);
      std::memcpy(bias_.get_data_handle(), ctx.constants[2]->data(), static_cast<size_t>(g_.oc) * sizeof(float));
    }
    memory::desc src_nhwc(src_d, dt::f32, tag::nhwc), dst_nhwc(dst_d, dt::f32, tag::nhwc);
    src_ = memory(src_nhwc, eng, nullptr);
    dst_ = memory(dst_nhwc, eng, nullptr);
    wino_src_ = memory(pd.src_desc(), eng, nullptr);
    wino_dst_ = memory(pd.dst_desc(), eng, nullptr);
    wino_src_bytes_ = (pd.src_desc().get_size() + 63) / 64 * 64;
    wino_dst_bytes_ = (pd.dst_desc().get_size() + 63) / 64 * 64;
    dnnl::reorder::primitive_desc to_pd(eng, src_nhwc, eng, pd.src_desc(), with_user_scratchpad());
    dnnl::reorder::primitive_desc from_pd(eng, pd.dst_desc(), eng, dst_nhwc, with_user_scratchpad());
    to_blocked_ = dnnl::reorder(to_pd);
    from_blocked_ = dnnl::reorder(from_pd);
    // The Winograd kernels write nChw16c: 16 channels of a pixel are 64 contiguous bytes on both
    // sides, so our own pass unblocks a row and applies the post ops while it is in cache,
    // instead of oneDNN's reorder and then a second pass over the whole output.
    own_unblock_ = pd.dst_desc() == memory::desc(dst_d, dt::f32, tag::nChw16c) && g_.oc % 16 == 0;
    args_ = {{DNNL_ARG_SRC, wino_src_}, {DNNL_ARG_WEIGHTS, *weights_}, {DNNL_ARG_DST, wino_dst_}};
    if (has_bias_) args_.emplace(DNNL_ARG_BIAS, bias_);
    to_args_ = {{DNNL_ARG_FROM, src_}, {DNNL_ARG_TO, wino_src_}};
    from_args_ = {{DNNL_ARG_FROM, wino_dst_}, {DNNL_ARG_TO, dst_}};
    // The three run one after another: their scratchpads share the space after the two tensors.
    const size_t pads_at = wino_src_bytes_ + wino_dst_bytes_;
    scratchpad_.init(pd.scratchpad_desc(), pads_at, args_);
    to_scratchpad_.init(to_pd.scratchpad_desc(), pads_at, to_args_);
    from_scratchpad_.init(from_pd.scratchpad_desc(), pads_at, from_args_);
    stream_ = dnnl::stream(eng);
    impl_ = pd.impl_info_str();
    wino_ = true;
    return true;
  }

  Status run_winograd(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) {
    src_.set_data_handle(in[0].data);
    dst_.set_data_handle(out[0].data);
    wino_src_.set_data_handle(ctx.scratch);
    wino_dst_.set_data_handle(ctx.scratch + wino_src_bytes_);
    scratchpad_.bind(ctx.scratch);
    to_scratchpad_.bind(ctx.scratch);
    from_scratchpad_.bind(ctx.scratch);
    to_blocked_.execute(stream_, to_args_);
    conv_.execute(stream_, args_);
    if (own_unblock_) {
      unblock_rows(reinterpret_cast<const float*>(ctx.scratch + wino_src_bytes_), out[0].as<float>(), sum_input(in), ctx.threads);
      return ok();
    }
    from_blocked_.execute(stream_, from_args_);
    if (!post_.empty()) apply_post_ops_to_all(in, out[0], ctx.threads);
    return ok();
  }

  // nChw16c -> NHWC, one output row (all channels of W pixels) at a time, then the post ops on
  // that row while it is in cache.
  void unblock_rows(const float* blocked, float* y, const float* sum, int threads) const {
    const int64_t c = g_.oc, h = g_.oh, w = g_.ow, cb_count = c / 16;
    parallel_for(g_.n * h, threads, 2, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / h, row = r % h;
        float* yrow = y + r * w * c;
        for (int64_t cb = 0; cb < cb_count; ++cb) {
          const float* src = blocked + ((n * cb_count + cb) * h + row) * w * 16;
          float* dst = yrow + cb * 16;
          for (int64_t x = 0; x < w; ++x) std::memcpy(dst + x * c, src + x * 16, 16 * sizeof(float));
        }
        if (!post_.empty()) apply_post_ops(y, sum, r * w * c, (r + 1) * w * c);
      }
    });
  }

  // The post ops oneDNN would have fused, on y[b, e) of a finished output: all of them on one
  // L1-sized chunk before the next (and `finish` on it, while it is in cache).
  void apply_post_ops(float* y, const float* sum, int64_t b, int64_t e, const Finish& finish = {}) const {
    constexpr int64_t kChunk = 2048;
    for (int64_t c0 = b; c0 < e; c0 += kChunk) {
      const int64_t c1 = std::min(e, c0 + kChunk);
      for (const PostOp& p : post_) {
        switch (p.kind) {
          case PostKind::kSilu: ops::silu(y + c0, y + c0, c1 - c0); break;
          case PostKind::kSigmoid: ops::sigmoid(y + c0, y + c0, c1 - c0); break;
          case PostKind::kSum: for (int64_t i = c0; i < c1; ++i) y[i] += sum[i]; break;
          case PostKind::kRelu: for (int64_t i = c0; i < c1; ++i) y[i] = y[i] > 0 ? y[i] : 0.f; break;
          case PostKind::kLeakyRelu: for (int64_t i = c0; i < c1; ++i) y[i] = y[i] >= 0 ? y[i] : p.alpha * y[i]; break;
          case PostKind::kHardSwish:
            for (int64_t i = c0; i < c1; ++i) y[i] = y[i] * std::max(0.f, std::min(1.f, y[i] / 6.f + 0.5f));
            break;
          case PostKind::kClip: for (int64_t i = c0; i < c1; ++i) y[i] = std::min(std::max(y[i], p.alpha), p.beta); break;
        }
      }
      if (finish) finish(c0, c1);
    }
  }
  // The same over a whole finished output, split over the threads.
  void apply_post_ops_to_all(std::span<const TensorRef> in, const TensorRef& out, int threads, const Finish& finish = {}) const {
    float* y = out.as<float>();
    const float* sum = sum_input(in);
    parallel_for(out.numel(), threads, 16384, [&](int64_t b, int64_t e) { apply_post_ops(y, sum, b, e, finish); });
  }
  // A fused residual sum's operand, the node's 4th input (init checked its shape).
  static const float* sum_input(std::span<const TensorRef> in) { return in.size() > 3 ? in[3].as<float>() : nullptr; }
  std::unique_ptr<ops::StemConv> stem_;
  std::unique_ptr<ops::StemConvBf16> stem_bf16_;  // --precision bf16: in place of stem_
  std::unique_ptr<ops::WinogradConv> own_wino_;  // our Winograd runs the node (winograd_conv.h)
  std::unique_ptr<ops::PointwiseConv> own_pw_;   // our 1x1 kernel runs the node (pointwise_conv.h)
  std::vector<ops::SrcPart> parts_;               // its source's parts (kSrcParts): channels and strides
  int64_t dst_stride_ = 0;  // kDstPixelStride: floats a pixel in a strided destination (0: dense)
  int64_t src_stride_ = 0, sum_stride_ = 0;  // kSrcPixelStride, kSumPixelStride: the same for the source and sum
  // Under --precision bf16, the float32 kernel of the same node that runs it (take_float32_if_chosen).
  std::unique_ptr<ConvKernel> float32_;
  bool float32_only_ = false;  // this kernel ignores kBf16Compute: a bf16 node's float32 candidate
  bool stem_fused_post_ = false;  // the stem kernel applies post_ itself
  std::vector<PostOp> post_;
  bool own_post_ = false;  // a direct convolution's post ops run in apply_post_ops, not in oneDNN
  bool wino_ = false;
  bool bf16_ = false;  // direct convolution on a bf16 copy of the source (bf16_src_, in scratch)
  bool src_bf16_ = false;  // ... or on its bf16 source itself (a bf16 tensor: no copy)
  bool dst_bf16_ = false;  // writes bf16: the float32 result at float_result_at_ in scratch, then converted
  size_t float_result_at_ = 0, float_result_bytes_ = 0;  // none where our Winograd writes bf16 itself
  bool sum_bf16_ = false;  // the residual operand is a bf16 tensor (our Winograd reads it; others from float_sum_at_)
  size_t float_sum_at_ = 0, float_sum_bytes_ = 0;
  memory bf16_src_;
  size_t bf16_src_bytes_ = 0;
  bool own_unblock_ = false;  // Winograd result unblocked by unblock_rows, not by from_blocked_
  size_t wino_src_bytes_ = 0, wino_dst_bytes_ = 0;
  memory wino_src_, wino_dst_;
  dnnl::reorder to_blocked_, from_blocked_;
  std::unordered_map<int, memory> to_args_, from_args_;

  ConvGeometry g_{};
  bool src_nhwc_ = false, dst_nhwc_ = false, has_bias_ = false;
  int sum_index_ = -1;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward conv_;
  std::shared_ptr<const dnnl::memory> weights_;
  Scratchpad scratchpad_, to_scratchpad_, from_scratchpad_;
  memory bias_, src_, dst_, sum_;
  std::unordered_map<int, memory> args_;
  dnnl::stream stream_;
  std::string impl_;
};

Result<std::vector<ValueType>> infer_conv(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(auto g, conv_geometry(ctx));
  const DType out = ctx.node.attrs.get_int(kBf16Output, 0) != 0 ? DType::kBFloat16 : DType::kFloat32;
  return ops::one_output(out, Shape{g.n, g.oc, g.oh, g.ow});
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  for (const char* name : {"Conv", "FusedConv"}) {
    OpSchema s;
    s.op_type = name;
    s.min_inputs = 2;
    s.infer = infer_conv;
    s.create = ops::make_factory<ConvKernel>();
    r.add(std::move(s));
  }
}

}  // namespace sd::native::dnnl_ops

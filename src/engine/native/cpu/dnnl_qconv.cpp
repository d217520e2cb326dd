// Int8Conv (passes/qdq_fusion.cpp): a QDQ convolution as one oneDNN int8 convolution. u8 or s8
// source, s8 weights (reordered once into the primitive's format, with the compensation oneDNN
// adds for an s8 source or a source zero point), f32 bias in accumulator units, u8 or s8
// destination; the requantization x_scale * w_scale[oc] / y_scale as oneDNN's output scales
// (per output channel where the weights are), the source and destination zero points as its
// zero points. oneDNN rounds to nearest even and saturates, as QuantizeLinear does. A
// convolution whose output was not quantized ("y_float", the model's head) writes f32: output
// scales x_scale * w_scale[oc], no destination zero point. A quantized SiLU that followed is a
// 256-entry table on the quantized result ("silu_out_*"; one read as float is an Int8Table node
// of its own, cpu/int8_table_ops.cpp). On a processor with AVX-512 VNNI it has VNNI kernels
// (vpdpbusd), on AVX2 AVX2 int8 ones; where it has more than one implementation for the node's
// shape (jit_int8 and brgconv, say), the fastest on that shape runs, timed at load (choose();
// the profile and model-info name it).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/native/conv_attrs.h"
#include "engine/native/conv_choice.h"
#include "engine/native/cpu/byte_table_kernel.h"
#include "engine/native/cpu/dnnl_context.h"
#include "engine/native/cpu/int8_conv_in_float.h"
#include "engine/native/cpu/int8_support.h"
#include "engine/native/cpu/quantized_silu.h"
#include "engine/native/cpu/timed_choice.h"
#include "engine/native/cpu/weight_cache.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::dnnl_ops {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dt dnnl_type(DType t) { return t == DType::kFloat32 ? dt::f32 : t == DType::kInt8 ? dt::s8 : dt::u8; }

class Int8ConvKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const DType xt = ctx.inputs[0].dtype;
    // The convolution's own quantized result (before a fused SiLU, whose output is outputs[0]).
    // y_float: a convolution whose output was not quantized (the model's head): f32 destination.
    const bool y_float = ctx.node.attrs.get_int("y_float", 0) != 0;
    const DType yt = y_float ? DType::kFloat32 : ctx.node.attrs.get_int("y_signed", 0) != 0 ? DType::kInt8 : DType::kUInt8;
    if ((xt != DType::kInt8 && xt != DType::kUInt8) || ctx.inputs[1].dtype != DType::kInt8)
      return fail(ErrorCode::kModel, ctx.describe() + ": an int8 convolution takes int8/uint8 data and int8 weights");
    if (!ctx.constants[1] || (ops::has_input(ctx, 2) && !ctx.constants[2]))
      return fail(ErrorCode::kModel, ctx.describe() + ": weights and bias must be constant");
    SD_ASSIGN_OR_RETURN(const ops::ConvGeometry g, ops::conv_geometry(ctx));
    const auto& a = ctx.node.attrs;
    const bool src_nhwc = a.get_int(kSrcNhwc, 0) != 0, dst_nhwc = a.get_int(kDstNhwc, 0) != 0;
    const float xs = a.get_float("x_scale", 1.f), ys = y_float ? 1.f : a.get_float("y_scale", 1.f);
    const auto ws = a.get_floats("w_scales");
    if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != g.oc) return fail(ErrorCode::kModel, ctx.describe() + ": bad w_scales");
    std::vector<float> scales;
    for (float w : ws) scales.push_back(xs * w / ys);
    const int32_t xz = static_cast<int32_t>(a.get_int("x_zero_point", 0)), yz = y_float ? 0 : static_cast<int32_t>(a.get_int("y_zero_point", 0));

    auto& eng = cpu_engine();
    memory::dims src_d{g.n, g.c, g.h, g.w}, dst_d{g.n, g.oc, g.oh, g.ow};
    memory::dims wei_d = g.group > 1 ? memory::dims{g.group, g.oc / g.group, g.c / g.group, g.kh, g.kw} : memory::dims{g.oc, g.c, g.kh, g.kw};
    memory::desc src_md(src_d, dnnl_type(xt), src_nhwc ? tag::nhwc : tag::nchw);
    memory::desc dst_md(dst_d, dnnl_type(yt), dst_nhwc ? tag::nhwc : tag::nchw);
    memory::desc wei_any(wei_d, dt::s8, tag::any);
    memory::desc bias_md({g.oc}, dt::f32, tag::a);
    const bool has_bias = ops::has_input(ctx, 2);
    dnnl::primitive_attr attr;
    attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);
    if (xz != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    if (yz != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    const auto fwd = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    auto desc = has_bias ? dnnl::convolution_forward::desc(fwd, alg, src_md, wei_any, bias_md, dst_md, {g.sh, g.sw}, {g.dh - 1, g.dw - 1},
                                                           {g.pt, g.pl}, {g.pb, g.pr})
                         : dnnl::convolution_forward::desc(fwd, alg, src_md, wei_any, dst_md, {g.sh, g.sw}, {g.dh - 1, g.dw - 1},
                                                           {g.pt, g.pl}, {g.pb, g.pr});
    std::vector<dnnl::convolution_forward::primitive_desc> pds;
    try {
      pds = implementations(desc, with_user_scratchpad(attr));
    } catch (const dnnl::error& e) {
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": oneDNN has no int8 convolution for this case (" + e.what() + ")");
    }
    src_ = memory(src_md, eng, nullptr);
    dst_ = memory(dst_md, eng, nullptr);
    std::unordered_map<int, memory> shared_args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
    if (has_bias) {
      bias_ = memory(bias_md, eng);
      std::memcpy(bias_.get_data_handle(), ctx.constants[2]->data(), static_cast<size_t>(g.oc) * sizeof(float));
      shared_args.emplace(DNNL_ARG_BIAS, bias_);
    }
    auto zero_point = [&](int32_t v, int arg) {
      memory m({{1}, dt::s32, tag::x}, eng);
      *static_cast<int32_t*>(m.get_data_handle()) = v;
      shared_args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | arg, m);
    };
    if (xz != 0) zero_point(xz, DNNL_ARG_SRC);
    if (yz != 0) zero_point(yz, DNNL_ARG_DST);
    // Each implementation with its own weights (reordered into the format it chose) and scratchpad.
    const memory::desc wei_plain(wei_d, dt::s8, g.group > 1 ? tag::goihw : tag::oihw);
    auto build = [&](const dnnl::convolution_forward::primitive_desc& pd) {
      Implementation im;
      im.pd = pd;
      im.conv = dnnl::convolution_forward(pd);
      im.weights = shared_weights(*ctx.constants[1], wei_plain, pd.weights_desc());
      im.args = shared_args;
      im.args.emplace(DNNL_ARG_WEIGHTS, *im.weights);
      im.scratchpad.init(pd.scratchpad_desc(), 0, im.args);
      return im;
    };
    stream_ = dnnl::stream(eng);
    std::vector<Implementation> timed;  // every candidate, built only when they are timed
    const size_t chosen = choose(ctx, g, pds, xt, yt, xz != 0, yz != 0, scales.size(), [&] {
      for (const auto& pd : pds) timed.push_back(build(pd));
      return time_implementations(timed);
    });
    im_ = timed.empty() ? build(pds[chosen]) : std::move(timed[chosen]);
    impl_ = im_.pd.impl_info_str();
    if (a.has("silu_in_scale") && !y_float) {
      build_silu_table(a, yt == DType::kInt8, ctx.outputs[0].dtype == DType::kInt8);
      impl_ += "+silu_table";
    }
    return ok();
  }

  size_t scratch_bytes() const override { return im_.scratchpad.end(); }
  std::string implementation() const override { return impl_; }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    src_.set_data_handle(in[0].data);
    dst_.set_data_handle(out[0].data);
    im_.scratchpad.bind(ctx.scratch);
    im_.conv.execute(stream_, im_.args);
    if (silu_) {  // in place: the convolution's quantized result -> the quantized SiLU of it
      // Int8Table's vector lookup (64 bytes at a time on AVX-512): a load and a store per byte
      // took the int8 YOLOv8n's stem 0.4 of its 0.52 ms (its convolution alone: 0.12 ms).
      auto* y = static_cast<uint8_t*>(out[0].data);
      parallel_for(static_cast<int64_t>(out[0].bytes()), ctx.threads, 65536, [&](int64_t b, int64_t e) { lookup_(y + b, y + b, e - b, lut_.data()); });
    }
    return ok();
  }

 private:
  // One of oneDNN's implementations of the node, ready to run (its arguments hold src_ and dst_).
  struct Implementation {
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward conv;
    std::shared_ptr<const memory> weights;
    std::unordered_map<int, memory> args;
    Scratchpad scratchpad;
  };

  // oneDNN's first implementation of `desc`, then its others that use the same instruction set
  // (the text after ':' in the name, "avx512_core_vnni" say) by name: its kernels for older
  // processors (avx2_vnni, sse41), its gemm and its reference ones come after the first, are
  // never faster there, and timed on a busy machine one of them could win by noise.
  // Why by name and not in oneDNN's order: oneDNN 2.6's iterator (next_impl) also returns the
  // implementations its primitive cache holds, each at the position it had when its primitive
  // was made, without moving on, so that after a first session the same one comes twice and
  // the order of the others depends on what earlier sessions made. Its first is always its first.
  static std::vector<dnnl::convolution_forward::primitive_desc> implementations(const dnnl::convolution_forward::desc& desc,
                                                                                const dnnl::primitive_attr& attr) {
    constexpr size_t kMaxCandidates = 3;
    auto isa_of = [](const std::string& name) {
      const size_t colon = name.find(':');
      return colon == std::string::npos ? std::string() : name.substr(colon + 1);
    };
    dnnl::convolution_forward::primitive_desc it(desc, attr, cpu_engine());  // throws when there is none
    const std::string first = it.impl_info_str(), isa = isa_of(first);
    std::vector<dnnl::convolution_forward::primitive_desc> out{it};  // a copy keeps the implementation
    std::map<std::string, dnnl::convolution_forward::primitive_desc> others;
    while (!isa.empty() && it.next_impl()) {  // the iterator moves on
      const std::string name = it.impl_info_str();
      if (name != first && isa_of(name) == isa && name.rfind("ref", 0) != 0) others.emplace(name, it);
    }
    for (const auto& [name, pd] : others)
      if (out.size() < kMaxCandidates) out.push_back(pd);
    return out;
  }

  // Which of `pds` runs the node: the forced index (kConvCandidate, clamped to the last), or the
  // fastest on this shape, measure()d once per process (timed_choice.h; a clear margin before
  // leaving oneDNN's first). They all compute the same integer convolution with the same
  // rounding: the choice changes no byte of the result (QdqFusion.EveryInt8ImplementationGivesTheSameBytes).
  static size_t choose(const OpContext& ctx, const ops::ConvGeometry& g, const std::vector<dnnl::convolution_forward::primitive_desc>& pds,
                       DType xt, DType yt, bool xz, bool yz, size_t scale_count, const std::function<size_t()>& measure) {
    const int64_t forced = ctx.node.attrs.get_int(kConvCandidate, kTimedCandidate);
    const auto last = static_cast<int64_t>(pds.size()) - 1;
    if (forced != kTimedCandidate) return static_cast<size_t>(std::clamp<int64_t>(forced, 0, last));
    if (pds.size() < 2) return 0;
    const int64_t threads = std::max<int64_t>(1, ctx.node.attrs.get_int(kPlanThreads, 1));
    std::string key = "int8," + geometry_key(g, threads);
    auto type = [](DType t) { return t == DType::kFloat32 ? "f32" : t == DType::kInt8 ? "s8" : "u8"; };
    key += std::string(",") + type(xt) + type(yt) + (xz ? ",xz" : "") +
           (yz ? ",yz" : "") + ",scales" + std::to_string(scale_count);
    for (const auto& pd : pds) key += std::string(",") + pd.impl_info_str();
    return remembered_choice(key, measure);
  }

  // Each of `impls` on made-up bytes of this node's shape, with the threads the session's runs
  // get on this thread (timed_choice.h's rounds).
  size_t time_implementations(std::vector<Implementation>& impls) {
    size_t pad_bytes = 64;
    for (const auto& im : impls) pad_bytes = std::max(pad_bytes, im.scratchpad.end());
    HostTensor src = timing_bytes(impls[0].pd.src_desc().get_size(), true), dst = timing_bytes(impls[0].pd.dst_desc().get_size()),
               scratch = timing_bytes(pad_bytes);
    src_.set_data_handle(src.data());
    dst_.set_data_handle(dst.data());
    const size_t best = fastest_candidate(
        impls.size(),
        [&](size_t i) {
          impls[i].scratchpad.bind(static_cast<unsigned char*>(scratch.data()));
          impls[i].conv.execute(stream_, impls[i].args);
        },
        kCautiousRule);
    src_.set_data_handle(nullptr);
    dst_.set_data_handle(nullptr);
    return best;
  }

  // The DequantizeLinear -> x * Sigmoid(x) -> QuantizeLinear that followed, for each of the 256
  // byte values, in float as those ops compute it.
  void build_silu_table(const Attributes& a, bool in_signed, bool out_signed) {
    lut_ = ops::quantized_silu_table(a, in_signed, out_signed);
    silu_ = true;
    lookup_ = ops::byte_table::lookup_kernel(cpu::active_isa());
  }

  bool silu_ = false;
  std::array<uint8_t, 256> lut_{};
  ops::byte_table::LookupFn lookup_ = ops::byte_table::lookup_baseline;
  Implementation im_;  // the one that runs the node
  memory src_, dst_, bias_;
  dnnl::stream stream_;
  std::string impl_;
};

// The faster on this node's shape of oneDNN's int8 convolution (candidate 0, exact) and the same
// node computed in float32 (int8_conv_in_float.h), timed on made-up bytes with the session's
// threads, kept per shape for the process. They differ by up to 2x either way (int8 wins the 1x1
// and strided layers, float32 Winograd the 3x3 ones), so no cap on the ratio; 5% in every round
// before leaving the exact one.
std::unique_ptr<Kernel> faster_of(const OpContext& ctx, std::unique_ptr<Kernel> int8, std::unique_ptr<Kernel> in_float) {
  auto g = ops::conv_geometry(ctx);
  if (!g) return int8;
  const int64_t threads = std::max<int64_t>(1, ctx.node.attrs.get_int(kPlanThreads, 1));
  const TensorRef x0(ctx.inputs[0].dtype, ctx.inputs[0].shape, nullptr), y0(ctx.outputs[0].dtype, ctx.outputs[0].shape, nullptr);
  std::string key = "int8|f32," + geometry_key(*g, threads) + "," + std::to_string(static_cast<int>(x0.dtype)) + "," +
                    std::to_string(static_cast<int>(y0.dtype)) + "," + std::to_string(ctx.node.attrs.has("silu_in_scale")) + "," +
                    std::to_string(ctx.node.attrs.get_int(kSrcNhwc, 0)) + std::to_string(ctx.node.attrs.get_int(kDstNhwc, 0)) + "," +
                    int8->implementation() + "," + in_float->implementation();
  const size_t best = remembered_choice(key, [&] {
    HostTensor src = timing_bytes(x0.bytes(), true), dst = timing_bytes(y0.bytes()),
               scratch = timing_bytes(std::max(int8->scratch_bytes(), in_float->scratch_bytes()));
    std::vector<TensorRef> in(ctx.inputs.size());
    in[0] = TensorRef(x0.dtype, x0.shape, src.data());
    for (size_t i = 1; i < in.size(); ++i)
      if (ctx.constants[i]) in[i] = TensorRef(ctx.constants[i]->dtype(), ctx.constants[i]->shape(), const_cast<void*>(ctx.constants[i]->data()));
    const TensorRef out(y0.dtype, y0.shape, dst.data());
    ExecContext ec;
    ec.threads = static_cast<int>(threads);
    ec.scratch = static_cast<unsigned char*>(scratch.data());
    // A candidate that fails does not run the node, however fast it fails.
    if (!in_float->run(in, std::span<const TensorRef>(&out, 1), ec)) return size_t{0};
    return fastest_candidate(
        2, [&](size_t i) { (void)(i == 0 ? int8 : in_float)->run(in, std::span<const TensorRef>(&out, 1), ec); },
        TimingRule{0.8, 0.95, true, 0.0});
  });
  return best == 0 ? std::move(int8) : std::move(in_float);
}

}  // namespace

void register_qconv_ops(OpRegistry& r) {
  OpSchema s;
  s.op_type = "Int8Conv";
  s.min_inputs = 2;
  s.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    SD_ASSIGN_OR_RETURN(const ops::ConvGeometry g, ops::conv_geometry(ctx));
    // The output's type is the QuantizeLinear's it replaced: recorded by the pass.
    const auto& a = ctx.node.attrs;
    const DType t = a.get_int("y_float", 0) != 0                                         ? DType::kFloat32
                    : a.get_int(a.has("out_signed") ? "out_signed" : "y_signed", 0) != 0 ? DType::kInt8
                                                                                        : DType::kUInt8;
    return ops::one_output(t, Shape{g.n, g.oc, g.oh, g.ow});
  };
  // Where the processor's int8 kernels would not compute it exactly (the pass marked it): float32.
  // Where they compute it exactly without AVX-512 VNNI (a uint8 source and 7-bit weights on AVX2;
  // anything on AVX-VNNI's 256-bit vpdpbusd), they run at two to four times float32's FMA rate,
  // which our float32 and int16 Winograd beat on 3x3 layers: the two timed. With AVX-512 VNNI
  // oneDNN's run every layer at 68-81% of the int8 peak: not timed (docs/benchmarks.md).
  s.create = [](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    if (ctx.node.attrs.get_int(ops::kInt8InFloat, 0) != 0) return ops::make_int8_conv_in_float(ctx);
    SD_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> int8, ops::make_factory<Int8ConvKernel>()(ctx));
    if (int8_kernels_avx512_vnni() || ctx.node.attrs.get_int(kConvCandidate, kTimedCandidate) != kTimedCandidate) return int8;
    auto in_float = ops::make_int8_conv_in_float(ctx);
    if (!in_float) return int8;
    return faster_of(ctx, std::move(int8), std::move(*in_float));
  };
  r.add(std::move(s));
}

}  // namespace sd::native::dnnl_ops

namespace sd::native {
// oneDNN's effective instruction set (under any cap).
bool int8_kernels_avx512_vnni() {
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}
bool int8_dot_products_exact() { return int8_kernels_avx512_vnni() || dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx2_vnni; }
}  // namespace sd::native

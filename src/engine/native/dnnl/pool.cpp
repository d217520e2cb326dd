// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool on oneDNN (2-D, NCHW or NHWC).
#include <unordered_map>

#include "engine/native/dnnl/dnnl_context.h"
#include "engine/native/ops/op_util.h"

namespace sd::native::dnnl_ops {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct PoolGeometry {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, oh, ow;
  bool max = true, include_pad = false;
};

Result<PoolGeometry> pool_geometry(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank != 4) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only 2-D pooling is supported (input " + x.str() + ")");
  const auto& a = ctx.node.attrs;
  const std::string& op = ctx.node.op_type;
  PoolGeometry g{};
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.max = op == "MaxPool" || op == "GlobalMaxPool";
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    g.kh = g.h, g.kw = g.w, g.sh = g.sw = 1, g.oh = g.ow = 1;
    return g;
  }
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] >= 0)
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": the Indices output of MaxPool is not supported");
  auto ks = a.get_ints("kernel_shape");
  if (ks.size() != 2) return fail(ErrorCode::kUnsupported, ctx.describe() + ": kernel_shape must have 2 values");
  auto dil = a.get_ints("dilations", {1, 1});
  if (dil.size() != 2 || dil[0] != 1 || dil[1] != 1) return fail(ErrorCode::kUnsupported, ctx.describe() + ": dilated pooling is not supported");
  auto st = a.get_ints("strides", {1, 1}), pads = a.get_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || pads.size() != 4) return fail(ErrorCode::kModel, ctx.describe() + ": bad strides/pads");
  g.kh = ks[0], g.kw = ks[1], g.sh = st[0], g.sw = st[1];
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1) return fail(ErrorCode::kModel, ctx.describe() + ": bad kernel or strides");
  g.pt = pads[0], g.pl = pads[1], g.pb = pads[2], g.pr = pads[3];
  g.include_pad = a.get_int("count_include_pad", 0) != 0;
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  const bool ceil = a.get_int("ceil_mode", 0) != 0;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    g.oh = (g.h + g.sh - 1) / g.sh, g.ow = (g.w + g.sw - 1) / g.sw;
    int64_t ph = std::max<int64_t>(0, (g.oh - 1) * g.sh + g.kh - g.h), pw = std::max<int64_t>(0, (g.ow - 1) * g.sw + g.kw - g.w);
    bool upper = auto_pad == "SAME_UPPER";
    g.pt = upper ? ph / 2 : ph - ph / 2, g.pb = ph - g.pt;
    g.pl = upper ? pw / 2 : pw - pw / 2, g.pr = pw - g.pl;
  } else {
    if (auto_pad == "VALID") g.pt = g.pl = g.pb = g.pr = 0;
    auto out = [&](int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1) {
      int64_t span = in + p0 + p1 - k;
      int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
      if (ceil && (o - 1) * s >= in + p0) --o;  // the last window must start inside the input or its left padding
      return o;
    };
    g.oh = out(g.h, g.kh, g.sh, g.pt, g.pb);
    g.ow = out(g.w, g.kw, g.sw, g.pl, g.pr);
    // oneDNN wants the right padding that makes the output size exact.
    g.pb = (g.oh - 1) * g.sh + g.kh - g.h - g.pt;
    g.pr = (g.ow - 1) * g.sw + g.kw - g.w - g.pl;
  }
  if (g.oh < 1 || g.ow < 1) return fail(ErrorCode::kModel, ctx.describe() + ": the output would be empty");
  return g;
}

class PoolKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.inputs[0].dtype != DType::kFloat32) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only float32 is supported");
    SD_ASSIGN_OR_RETURN(g_, pool_geometry(ctx));
    const bool nhwc = ctx.node.attrs.get_int(kSrcNhwc, 0) != 0;
    auto& eng = cpu_engine();
    memory::desc src_md({g_.n, g_.c, g_.h, g_.w}, dt::f32, nhwc ? tag::nhwc : tag::nchw);
    memory::desc dst_md({g_.n, g_.c, g_.oh, g_.ow}, dt::f32, nhwc ? tag::nhwc : tag::nchw);
    auto alg = g_.max ? dnnl::algorithm::pooling_max
                      : (g_.include_pad ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_avg_exclude_padding);
    try {
      dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src_md, dst_md, {g_.sh, g_.sw}, {g_.kh, g_.kw},
                                    {g_.pt, g_.pl}, {g_.pb, g_.pr});
      pd_ = dnnl::pooling_forward::primitive_desc(d, with_user_scratchpad(), eng);
      pool_ = dnnl::pooling_forward(pd_);
    } catch (const dnnl::error& e) {
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": oneDNN has no pooling for this case (" + e.what() + ")");
    }
    src_ = memory(src_md, eng, nullptr);
    dst_ = memory(dst_md, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
    scratchpad_.init(pd_.scratchpad_desc(), 0, args_);
    stream_ = dnnl::stream(eng);
    return ok();
  }
  size_t scratch_bytes() const override { return scratchpad_.end(); }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    src_.set_data_handle(in[0].data);
    dst_.set_data_handle(out[0].data);
    scratchpad_.bind(ctx.scratch);
    pool_.execute(stream_, args_);
    return ok();
  }

 private:
  PoolGeometry g_{};
  dnnl::pooling_forward::primitive_desc pd_;
  dnnl::pooling_forward pool_;
  Scratchpad scratchpad_;
  memory src_, dst_;
  std::unordered_map<int, memory> args_;
  dnnl::stream stream_;
};

}  // namespace

void register_pool_ops(OpRegistry& r) {
  for (const char* name : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    OpSchema s;
    s.op_type = name;
    s.infer = [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
      SD_ASSIGN_OR_RETURN(auto g, pool_geometry(ctx));
      return ops::one_output(DType::kFloat32, Shape{g.n, g.c, g.oh, g.ow});
    };
    s.create = ops::make_factory<PoolKernel>();
    r.add(std::move(s));
  }
}

}  // namespace sd::native::dnnl_ops

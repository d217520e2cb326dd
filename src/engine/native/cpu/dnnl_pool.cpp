// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool on oneDNN (2-D, NCHW or NHWC).
#include <unordered_map>

#include "engine/native/cpu/dnnl_context.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/op_util.h"

namespace sd::native::dnnl_ops {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using ops::pool_geometry;
using ops::PoolGeometry;


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

// ConcatPlanes (internal): a channels-last Concat along the channels and its layout conversion to
// NCHW in one pass. The planner (exec/plan_layout.cpp, Planner::convert) gives a channels-last
// Concat that copies every input, and that is read only through its conversion to NCHW, this
// kernel instead: each input [n, h, w, c_k] is transposed straight into its channel planes of the
// [n, C, h, w] output, so the Concat's copy of every byte goes. That is the head of a QDQ YOLOv8
// (each scale's box and class maps are the f32 results of oneDNN's int8 convolutions, which
// cannot write into a wider row) and of a float one whose last convolutions are oneDNN's.
// kDstRowStride: the output's planes that far apart (elements), as a layout conversion writes them
// into the rows of the head's Concat over the scales (exec/plan_concat.cpp). 4-byte elements.
#include <algorithm>

#include "core/cpu_isa.h"
#include "engine/native/cpu/transpose_kernel.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

constexpr int64_t kTile = 32;  // the Transpose kernel's tiles (cpu/shape_ops.cpp)

class ConcatPlanesKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const Shape& o = ctx.outputs[0].shape;
    if (o.rank != 4 || dtype_size(ctx.outputs[0].dtype) != 4) return fail(ErrorCode::kInternal, ctx.describe() + ": 4-D tensors of 4-byte elements only");
    n_ = o[0];
    pixels_ = o[2] * o[3];
    channels_ = o[1];
    int64_t first = 0, tiles = 0;
    for (const auto& in : ctx.inputs) {
      if (in.shape.rank != 4 || in.shape[0] != n_ || in.shape[1] * in.shape[2] != pixels_ || in.dtype != ctx.outputs[0].dtype)
        return fail(ErrorCode::kInternal, ctx.describe() + ": inputs must be [n, h, w, c] of the output's pixels and type");
      const int64_t c = in.shape[3];
      parts_.push_back(Part{first, c, tiles});
      first += c;
      tiles += n_ * ((pixels_ + kTile - 1) / kTile) * ((c + kTile - 1) / kTile);
    }
    if (first != channels_) return fail(ErrorCode::kInternal, ctx.describe() + ": the inputs' channels do not add up to the output's");
    tiles_ = tiles;
    row_stride_ = ctx.node.attrs.get_int(kDstRowStride, 0);
    if (row_stride_ == 0) row_stride_ = pixels_;
    if (row_stride_ < pixels_) return fail(ErrorCode::kInternal, ctx.describe() + ": rows narrower than a plane");
    block_ = transpose::block_kernel(cpu::active_isa());
    return ok();
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    auto* y = static_cast<uint32_t*>(out[0].data);
    const int64_t pixel_tiles = (pixels_ + kTile - 1) / kTile;
    parallel_for(tiles_, ctx.threads, 8, [&](int64_t s, int64_t e) {
      for (int64_t t = s; t < e; ++t) {
        // The input whose tiles hold t, then t within them: batch, pixel tile, channel tile.
        size_t k = parts_.size() - 1;
        while (parts_[k].first_tile > t) --k;
        const Part& p = parts_[k];
        const int64_t channel_tiles = (p.channels + kTile - 1) / kTile, local = t - p.first_tile;
        const int64_t b = local / (pixel_tiles * channel_tiles), pi = local / channel_tiles % pixel_tiles * kTile, ci = local % channel_tiles * kTile;
        const uint32_t* src = in[k].as<uint32_t>() + (b * pixels_ + pi) * p.channels + ci;
        uint32_t* dst = y + (b * channels_ + p.first_channel + ci) * row_stride_ + pi;
        block_(src, p.channels, dst, row_stride_, std::min(kTile, pixels_ - pi), std::min(kTile, p.channels - ci));
      }
    });
    return ok();
  }

 private:
  struct Part {
    int64_t first_channel, channels, first_tile;
  };
  int64_t n_ = 1, pixels_ = 0, channels_ = 0, row_stride_ = 0, tiles_ = 0;
  std::vector<Part> parts_;
  transpose::BlockFn block_ = transpose::block_baseline;
};

Result<std::vector<ValueType>> infer_concat_planes(const OpContext& ctx) {
  if (ctx.inputs.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": needs inputs");
  const Shape& s = ctx.inputs[0].shape;
  if (s.rank != 4) return fail(ErrorCode::kModel, ctx.describe() + ": reads [n, h, w, c] tensors");
  int64_t c = 0;
  for (const auto& in : ctx.inputs) c += in.shape.rank == 4 ? in.shape[3] : 0;
  return one_output(ctx.inputs[0].dtype, Shape{s[0], c, s[1], s[2]});
}

}  // namespace

void register_concat_planes_op(OpRegistry& r) { r.add(make_schema("ConcatPlanes", infer_concat_planes, make_factory<ConcatPlanesKernel>())); }

}  // namespace sd::native::ops

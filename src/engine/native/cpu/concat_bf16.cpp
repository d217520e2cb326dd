// Bf16Concat (internal, --precision bf16): a Concat written as bf16, for a tensor whose every
// reader is a oneDNN bf16 convolution or another Bf16Concat (precision.h, keep_bf16_tensors). Its
// float32 inputs are converted while copied (the conversion each of those convolutions did on its
// source, a oneDNN reorder, with the same rounding: bf16_convert.h), its bf16 ones copied.
#include <algorithm>
#include <cstring>

#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

class Bf16ConcatKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const Shape& o = ctx.outputs[0].shape;
    if (ctx.outputs[0].dtype != DType::kBFloat16) return fail(ErrorCode::kUnsupported, ctx.describe() + ": writes bf16 only");
    for (const auto& in : ctx.inputs) {
      if (in.dtype != DType::kFloat32 && in.dtype != DType::kBFloat16)
        return fail(ErrorCode::kUnsupported, ctx.describe() + ": reads float32 or bf16 only");
      is_bf16_.push_back(in.dtype == DType::kBFloat16);
    }
    SD_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx.node.attrs.get_int("axis", 0), o.rank, ctx));
    for (int i = 0; i < axis; ++i) outer_ *= o[i];
    int64_t inner = 1;
    for (int i = axis + 1; i < o.rank; ++i) inner *= o[i];
    for (const auto& in : ctx.inputs) block_.push_back(static_cast<size_t>(in.shape.rank ? in.shape[axis] * inner : 0));
    out_block_ = static_cast<size_t>(o[axis] * inner);
    // bf16 inputs the planner had their producers write in place (kInPlaceInputs,
    // exec/plan_concat.cpp): already there, skipped.
    auto in_place = ctx.node.attrs.get_ints(kInPlaceInputs);
    in_place.resize(ctx.inputs.size(), 0);
    for (size_t i = 0; i < in_place.size(); ++i) {
      if (in_place[i] != 0 && !is_bf16_[i]) return fail(ErrorCode::kInternal, ctx.describe() + ": a float32 input placed in its bf16 rows");
      skip_.push_back(in_place[i] != 0);
    }
    return ok();
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    auto* dst = static_cast<uint16_t*>(out[0].data);
    // Channels-last: `outer_` pixels, each a row of every input's channels; a chunk of pixels
    // input by input (one call per input and chunk).
    const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(32768 / std::max<size_t>(out_block_, 1)));
    parallel_for(outer_, ctx.threads, grain, [&](int64_t b, int64_t e) {
      size_t off = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const size_t n = block_[i];
        uint16_t* d = dst + static_cast<size_t>(b) * out_block_ + off;
        off += n;
        if (n == 0 || skip_[i]) continue;
        if (!is_bf16_[i]) {
          floats_to_bf16_rows(in[i].as<float>() + static_cast<size_t>(b) * n, n, d, out_block_, static_cast<size_t>(e - b), n);
          continue;
        }
        const uint16_t* s = in[i].as<uint16_t>() + static_cast<size_t>(b) * n;
        for (int64_t o = b; o < e; ++o, s += n, d += out_block_) std::memcpy(d, s, n * sizeof(uint16_t));
      }
    });
    return ok();
  }

 private:
  int64_t outer_ = 1;
  size_t out_block_ = 0;
  std::vector<size_t> block_;  // elements of each input per outer index
  std::vector<bool> is_bf16_;  // the input is bf16 (copied), else float32 (converted)
  std::vector<bool> skip_;     // the input is in place already
};

Result<std::vector<ValueType>> infer_bf16_concat(const OpContext& ctx) {
  if (ctx.inputs.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": needs inputs");
  for (const auto& in : ctx.inputs)
    if (in.dtype != DType::kFloat32 && in.dtype != DType::kBFloat16)
      return fail(ErrorCode::kModel, ctx.describe() + ": reads float32 or bf16 only, got " + dtype_name(in.dtype));
  SD_ASSIGN_OR_RETURN(Shape out, concat_shape(ctx));
  return one_output(DType::kBFloat16, out);
}

}  // namespace

void register_bf16_concat_op(OpRegistry& r) { r.add(make_schema("Bf16Concat", infer_bf16_concat, make_factory<Bf16ConcatKernel>())); }

}  // namespace sd::native::ops

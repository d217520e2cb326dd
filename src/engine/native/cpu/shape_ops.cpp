// Shape and data-movement ops: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Dropout,
// Transpose, Concat, Split, Slice, Gather, Expand, Tile, Cast, ConstantOfShape, Range.
// Shape-computing uses run on int64 constants, so the planner folds them away.
#include <cmath>
#include <cstring>
#include <numeric>

#include <map>

#include "engine/native/cpu/transpose_kernel.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/op_util.h"
#include "engine/native/numeric.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

int min_inputs_of(const std::string& op) {
  static const std::map<std::string, int> n = {{"Reshape", 2}, {"Gather", 2}, {"Expand", 2}, {"Tile", 2}, {"Range", 3}, {"Constant", 0}, {"Slice", 1}};
  auto it = n.find(op);
  return it == n.end() ? 1 : it->second;
}

Shape shape_of(const std::vector<int64_t>& v) { return Shape::from(v.begin(), v.end()); }

// Copies the input bytes unchanged (Reshape & co.; the executor may alias instead).
class CopyKernel : public Kernel {
 public:
  Status init(const OpContext&) { return ok(); }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, out[0].bytes());
    return ok();
  }
};

OpSchema schema(const char* name, InferFn infer, KernelFactory create, int min_opset = 1, int max_opset = 99) {
  return make_schema(name, std::move(infer), std::move(create), min_inputs_of(name), min_opset, max_opset);
}

// ---- Shape / Size: computed from the input's shape only.
class ShapeKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const Shape& s = ctx.inputs[0].shape;
    if (ctx.node.op_type == "Size") {
      values_ = {s.numel()};
      return ok();
    }
    int64_t start = ctx.node.attrs.get_int("start", 0), end = ctx.node.attrs.get_int("end", s.rank);
    if (start < 0) start += s.rank;
    if (end < 0) end += s.rank;
    start = std::clamp<int64_t>(start, 0, s.rank);
    end = std::clamp<int64_t>(end, 0, s.rank);
    for (int64_t i = start; i < end; ++i) values_.push_back(s[static_cast<int>(i)]);
    return ok();
  }
  Status run(std::span<const TensorRef>, std::span<const TensorRef> out, const ExecContext&) override {
    if (!values_.empty()) std::memcpy(out[0].data, values_.data(), values_.size() * sizeof(int64_t));
    return ok();
  }
  std::vector<int64_t> values_;
};

Result<std::vector<ValueType>> infer_shape_op(const OpContext& ctx) {
  ShapeKernel k;
  SD_TRY(k.init(ctx));
  if (ctx.node.op_type == "Size") return one_output(DType::kInt64, Shape{});
  return one_output(DType::kInt64, Shape{static_cast<int64_t>(k.values_.size())});
}

// ---- Reshape
Result<std::vector<ValueType>> infer_reshape(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  std::vector<int64_t> target;
  if (ctx.opset < 5) target = ctx.node.attrs.get_ints("shape");
  else { SD_ASSIGN_OR_RETURN(target, constant_ints(ctx, 1, "shape")); }
  const bool allowzero = ctx.node.attrs.get_int("allowzero", 0) != 0;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      if (static_cast<int>(i) >= in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": shape keeps a dimension the input lacks");
      target[i] = in[static_cast<int>(i)];
    }
    if (target[i] == -1) {
      if (infer_at >= 0) return fail(ErrorCode::kModel, ctx.describe() + ": more than one -1 in the shape");
      infer_at = static_cast<int>(i);
    } else if (target[i] < 0) {
      return fail(ErrorCode::kModel, ctx.describe() + ": negative dimension in the shape");
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      return fail(ErrorCode::kModel, ctx.describe() + ": the shape is too large");
    }
  }
  if (target.size() > static_cast<size_t>(Shape::kMaxRank)) return fail(ErrorCode::kUnsupported, ctx.describe() + ": rank too high");
  if (infer_at >= 0) {
    if (known == 0 || in.numel() % known != 0)
      return fail(ErrorCode::kModel, ctx.describe() + ": cannot reshape " + in.str() + " with a -1 dimension");
    target[static_cast<size_t>(infer_at)] = in.numel() / known;
  }
  Shape out = shape_of(target);
  if (out.numel() != in.numel())
    return fail(ErrorCode::kModel, ctx.describe() + ": cannot reshape " + in.str() + " to " + out.str());
  return one_output(ctx.inputs[0].dtype, out);
}

Result<std::vector<ValueType>> infer_flatten(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  int64_t axis = ctx.node.attrs.get_int("axis", 1);
  if (axis < 0) axis += in.rank;
  if (axis < 0 || axis > in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": axis out of range");
  int64_t a = 1, b = 1;
  for (int i = 0; i < in.rank; ++i) (i < axis ? a : b) *= in[i];
  return one_output(ctx.inputs[0].dtype, Shape{a, b});
}

Result<std::vector<int64_t>> axes_of(const OpContext& ctx, size_t input, int since_opset) {
  if (ctx.opset >= since_opset) {
    if (!has_input(ctx, input)) return std::vector<int64_t>{};
    return constant_ints(ctx, input, "axes");
  }
  return ctx.node.attrs.get_ints("axes");
}

Result<std::vector<ValueType>> infer_squeeze(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(auto axes, axes_of(ctx, 1, 13));
  std::vector<bool> drop(static_cast<size_t>(in.rank), false);
  if (axes.empty()) {
    for (int i = 0; i < in.rank; ++i) drop[static_cast<size_t>(i)] = in[i] == 1;
  } else {
    for (int64_t a : axes) {
      SD_ASSIGN_OR_RETURN(int ax, normalize_axis(a, in.rank, ctx));
      if (in[ax] != 1) return fail(ErrorCode::kModel, ctx.describe() + ": cannot squeeze a dimension of size " + std::to_string(in[ax]));
      drop[static_cast<size_t>(ax)] = true;
    }
  }
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank; ++i)
    if (!drop[static_cast<size_t>(i)]) out.push_back(in[i]);
  return one_output(ctx.inputs[0].dtype, shape_of(out));
}

Result<std::vector<ValueType>> infer_unsqueeze(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(auto axes, axes_of(ctx, 1, 13));
  const int rank = in.rank + static_cast<int>(axes.size());
  if (rank > Shape::kMaxRank) return fail(ErrorCode::kUnsupported, ctx.describe() + ": rank too high");
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    SD_ASSIGN_OR_RETURN(int ax, normalize_axis(a, rank, ctx));
    if (inserted[static_cast<size_t>(ax)]) return fail(ErrorCode::kModel, ctx.describe() + ": repeated axis");
    inserted[static_cast<size_t>(ax)] = true;
  }
  std::vector<int64_t> out;
  int j = 0;
  for (int i = 0; i < rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[j++]);
  return one_output(ctx.inputs[0].dtype, shape_of(out));
}

Result<std::vector<ValueType>> infer_dropout(const OpContext& ctx) {
  std::vector<ValueType> out{ctx.inputs[0]};
  if (ctx.node.outputs.size() > 1) out.push_back(ValueType{DType::kBool, ctx.inputs[0].shape});
  return out;
}

class DropoutKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    bool training = ctx.node.attrs.get_int("training_mode", 0) != 0;
    if (has_input(ctx, 2)) training = !ctx.constants[2] || ctx.constants[2]->to_int64_vector().at(0) != 0;
    if (training) return fail(ErrorCode::kUnsupported, ctx.describe() + ": training mode is not supported (inference engine)");
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    std::memcpy(out[0].data, in[0].data, out[0].bytes());
    if (out.size() > 1 && out[1].data) std::memset(out[1].data, 1, out[1].bytes());  // inference: every element kept
    return ok();
  }
};

// ---- Transpose: a strided gather; the last output dim is the inner loop.
// 2-D blocks of 32-bit elements: transpose_kernel.h (one variant per instruction set).
class TransposeKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    in_ = ctx.inputs[0].shape;
    out_ = ctx.outputs[0].shape;
    es_ = dtype_size(ctx.inputs[0].dtype);
    perm_ = ctx.node.attrs.get_ints("perm");
    if (perm_.empty())
      for (int i = in_.rank - 1; i >= 0; --i) perm_.push_back(i);
    auto st = contiguous_strides(in_);
    for (int i = 0; i < out_.rank; ++i) src_stride_[static_cast<size_t>(i)] = st[static_cast<size_t>(perm_[static_cast<size_t>(i)])];
    // The planner's strided destination (kDstRowStride): the batched 2-D transpose of 4-byte
    // elements only, its output rows that far apart.
    row_stride_ = ctx.node.attrs.get_int(kDstRowStride, 0);
    if (row_stride_ != 0) {
      int64_t a = 0, b = 0, c = 0;
      if (!batched_2d(a, b, c) || es_ != 4 || row_stride_ < b) return fail(ErrorCode::kInternal, ctx.describe() + ": a strided destination only for a batched 2-D transpose of 4-byte elements");
      if (row_stride_ == b) row_stride_ = 0;
    }
    return ok();
  }
  template <class T>
  void go(const T* x, T* y, int threads) {
    const int r = out_.rank;
    if (r == 0) { y[0] = x[0]; return; }
    const int64_t inner = out_[r - 1], is = src_stride_[static_cast<size_t>(r - 1)];
    const int64_t outer = out_.numel() / std::max<int64_t>(inner, 1);
    parallel_for(outer, threads, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t rem = o, src = 0;
        for (int d = r - 2; d >= 0; --d) {
          src += (rem % out_[d]) * src_stride_[static_cast<size_t>(d)];
          rem /= out_[d];
        }
        T* dst = y + o * inner;
        const T* s = x + src;
        for (int64_t i = 0; i < inner; ++i) dst[i] = s[i * is];
      }
    });
  }
  // [A, B, C] -> [A, C, B] after merging the input dims that stay neighbours: a batch of 2-D
  // transposes (NCHW <-> NHWC is this), done in cache-sized tiles.
  bool batched_2d(int64_t& a, int64_t& b, int64_t& c) const {
    std::vector<std::vector<int64_t>> groups;  // runs of consecutive input dims, in output order
    for (int64_t p : perm_) {
      if (!groups.empty() && groups.back().back() + 1 == p) groups.back().push_back(p);
      else groups.push_back({p});
    }
    auto size = [&](const std::vector<int64_t>& g) {
      int64_t s = 1;
      for (int64_t d : g) s *= in_[static_cast<int>(d)];
      return s;
    };
    if (groups.size() == 3 && groups[0].front() == 0 && groups[2].front() < groups[1].front()) {
      a = size(groups[0]), b = size(groups[2]), c = size(groups[1]);
      return true;
    }
    if (groups.size() == 2 && groups[1].front() == 0) {
      a = 1, b = size(groups[1]), c = size(groups[0]);
      return true;
    }
    return false;
  }
  // 32-bit elements only (the callers check the element size).
  void tiled(const uint32_t* x, uint32_t* y, int64_t a, int64_t b, int64_t c, int threads) {
    const transpose::BlockFn block = transpose::block_kernel(cpu::active_isa());
    constexpr int64_t kTile = 32;
    const int64_t tb = (b + kTile - 1) / kTile, tc = (c + kTile - 1) / kTile;
    parallel_for(a * tb * tc, threads, 8, [&](int64_t s, int64_t e) {
      for (int64_t t = s; t < e; ++t) {
        const int64_t ai = t / (tb * tc), bi = (t / tc) % tb * kTile, ci = t % tc * kTile;
        const uint32_t* src = x + ai * b * c;
        const int64_t ld = row_stride_ != 0 ? row_stride_ : b;  // from one output row to the next
        uint32_t* dst = y + ai * ld * c;
        const int64_t bend = std::min(b, bi + kTile), cend = std::min(c, ci + kTile);
        block(src + bi * c + ci, c, dst + ci * ld + bi, ld, bend - bi, cend - ci);
      }
    });
  }
  // Any other permutation that moves the input's innermost dim away from the end (DFL's
  // [1, A, 4, 16] -> [1, 16, 4, A]): the output dim j that reads with stride 1 and the last output
  // dim form 2-D tiles, every other dim is an outer loop. The element-wise walk read every element
  // with a stride of 16 or 64 (0.6 ns an element); a tile reuses each line it loads.
  bool tiled_moving_inner(const uint32_t* x, uint32_t* y, int threads) {
    const transpose::BlockFn block = transpose::block_kernel(cpu::active_isa());
    const int r = out_.rank;
    if (r < 3 || src_stride_[static_cast<size_t>(r - 1)] == 1) return false;
    int j = -1;
    for (int d = 0; d < r - 1; ++d)
      if (src_stride_[static_cast<size_t>(d)] == 1 && out_[d] > 1) j = d;
    if (j < 0) return false;
    const auto dst_stride = contiguous_strides(out_);
    const int64_t nj = out_[j], ni = out_[r - 1], is = src_stride_[static_cast<size_t>(r - 1)];
    const int64_t dsj = dst_stride[static_cast<size_t>(j)];
    if (nj * ni == 0) return true;  // empty: nothing to move
    constexpr int64_t kTile = 32;
    const int64_t outer = out_.numel() / (nj * ni), tj = (nj + kTile - 1) / kTile, ti = (ni + kTile - 1) / kTile;
    parallel_for(outer * tj * ti, threads, 8, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t rem = t / (tj * ti), src = 0, dst = 0;
        for (int d = r - 2; d >= 0; --d) {
          if (d == j) continue;
          const int64_t idx = rem % out_[d];
          rem /= out_[d];
          src += idx * src_stride_[static_cast<size_t>(d)];
          dst += idx * dst_stride[static_cast<size_t>(d)];
        }
        const int64_t j0 = (t / ti) % tj * kTile, i0 = t % ti * kTile;
        const int64_t jend = std::min(nj, j0 + kTile), iend = std::min(ni, i0 + kTile);
        block(x + src + i0 * is + j0, is, y + dst + j0 * dsj + i0, dsj, iend - i0, jend - j0);
      }
    });
    return true;
  }
  // [a, b, c] -> [a, c, b] with few rows b, elements other than 32-bit: an int8 image's channels
  // going channels-last before an int8 stem (b = 3). Each output row of b takes one element of
  // each input row, the b input rows read in step; the element walk recomputed every index of
  // rows of 3 (4 ms per 640x640 image).
  template <class T>
  void few_rows(const T* x, T* y, int64_t a, int64_t b, int64_t c, int threads) {
    parallel_for(a * c, threads, 16384, [&](int64_t s, int64_t e) {
      int64_t ai = s / c, j = s % c;
      for (int64_t t = s; t < e; ++t) {
        const T* src = x + ai * b * c + j;
        T* dst = y + t * b;
        for (int64_t i = 0; i < b; ++i) dst[i] = src[i * c];
        if (++j == c) j = 0, ++ai;
      }
    });
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    int64_t a = 0, b = 0, c = 0;
    const bool b2d = batched_2d(a, b, c);
    if (row_stride_ != 0) {  // init checked: b2d, 4-byte elements
      tiled(in[0].as<uint32_t>(), out[0].as<uint32_t>(), a, b, c, ctx.threads);
      return ok();
    }
    if (b2d && es_ == 4) {
      tiled(in[0].as<uint32_t>(), out[0].as<uint32_t>(), a, b, c, ctx.threads);
      return ok();
    }
    if (b2d && b <= 16 && (es_ == 1 || es_ == 2)) {
      if (es_ == 1) few_rows(in[0].as<uint8_t>(), out[0].as<uint8_t>(), a, b, c, ctx.threads);
      else few_rows(in[0].as<uint16_t>(), out[0].as<uint16_t>(), a, b, c, ctx.threads);
      return ok();
    }
    if (es_ == 4 && tiled_moving_inner(in[0].as<uint32_t>(), out[0].as<uint32_t>(), ctx.threads)) return ok();
    switch (es_) {
      case 1: go(in[0].as<uint8_t>(), out[0].as<uint8_t>(), ctx.threads); break;
      case 2: go(in[0].as<uint16_t>(), out[0].as<uint16_t>(), ctx.threads); break;
      case 4: go(in[0].as<uint32_t>(), out[0].as<uint32_t>(), ctx.threads); break;
      default: go(in[0].as<uint64_t>(), out[0].as<uint64_t>(), ctx.threads); break;
    }
    return ok();
  }

 private:
  Shape in_, out_;
  size_t es_ = 4;
  std::vector<int64_t> perm_;
  std::array<int64_t, Shape::kMaxRank> src_stride_{};
  int64_t row_stride_ = 0;  // kDstRowStride (0: dense)
};

Result<std::vector<ValueType>> infer_transpose(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  auto perm = ctx.node.attrs.get_ints("perm");
  if (perm.empty())
    for (int i = in.rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != in.rank) return fail(ErrorCode::kModel, ctx.describe() + ": perm does not match the rank");
  std::vector<bool> seen(static_cast<size_t>(in.rank), false);
  Shape out;
  out.rank = in.rank;
  for (int i = 0; i < in.rank; ++i) {
    int64_t p = perm[static_cast<size_t>(i)];
    if (p < 0 || p >= in.rank || seen[static_cast<size_t>(p)]) return fail(ErrorCode::kModel, ctx.describe() + ": bad perm");
    seen[static_cast<size_t>(p)] = true;
    out[i] = in[static_cast<int>(p)];
  }
  return one_output(ctx.inputs[0].dtype, out);
}

// ---- Concat: each input is `outer` blocks of (its axis size x inner) bytes.
// Copies one block of a Concat or Split. Channels-last concatenations copy a few dozen floats
// per pixel, where a library memcpy call per block costs more than the copy: whole 64-byte
// and 32-byte chunks are copied inline (fixed-size copies the compiler turns into vector moves).
inline void copy_block(unsigned char* dst, const unsigned char* src, size_t n) {
  if (n % 32 == 0 && n <= 1024) {  // whole multiples of 8 floats, up to 256
    size_t k = 0;
    for (; k + 64 <= n; k += 64) std::memcpy(dst + k, src + k, 64);
    if (k < n) std::memcpy(dst + k, src + k, 32);
  } else if (n % 8 == 0 && n <= 1024) {  // int8 tensors' blocks: 8, 16, 24 ... channels of bytes
    size_t k = 0;
    for (; k + 64 <= n; k += 64) std::memcpy(dst + k, src + k, 64);
    for (; k + 16 <= n; k += 16) std::memcpy(dst + k, src + k, 16);
    if (k < n) std::memcpy(dst + k, src + k, 8);
  } else {
    std::memcpy(dst, src, n);
  }
}

class ConcatKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const Shape& o = ctx.outputs[0].shape;
    SD_ASSIGN_OR_RETURN(axis_, normalize_axis(ctx.node.attrs.get_int("axis", 0), o.rank, ctx));
    es_ = dtype_size(ctx.outputs[0].dtype);
    outer_ = 1;
    for (int i = 0; i < axis_; ++i) outer_ *= o[i];
    int64_t inner = 1;
    for (int i = axis_ + 1; i < o.rank; ++i) inner *= o[i];
    for (const auto& in : ctx.inputs) block_.push_back(static_cast<size_t>(in.shape.rank ? in.shape[axis_] * inner : 0) * es_);
    out_block_ = static_cast<size_t>(o[axis_] * inner) * es_;
    // Inputs the planner had their producers write in place (kInPlaceInputs, exec/plan_concat.cpp):
    // already there, skipped.
    auto in_place = ctx.node.attrs.get_ints(kInPlaceInputs);
    in_place.resize(ctx.inputs.size(), 0);
    for (size_t i = 0; i < in_place.size(); ++i) skip_.push_back(in_place[i] != 0);
    // Inputs read strided (kSrcPixelStrides: a Split's part left in its input, exec/plan_concat.cpp):
    // rows of the last axis that far apart.
    auto strides = ctx.node.attrs.get_ints(kSrcPixelStrides);
    strides.resize(ctx.inputs.size(), 0);
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      src_step_.push_back(block_[i]);
      if (strides[i] == 0) continue;
      if (inner != 1 || static_cast<size_t>(strides[i]) * es_ < block_[i])
        return fail(ErrorCode::kInternal, ctx.describe() + ": a strided input only along the last axis, wider than its rows");
      src_step_[i] = static_cast<size_t>(strides[i]) * es_;
    }
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    auto* dst = static_cast<unsigned char*>(out[0].data);
    parallel_for(outer_, ctx.threads, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(out_block_, 1))), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        size_t off = static_cast<size_t>(o) * out_block_;
        for (size_t i = 0; i < in.size(); ++i) {
          if (block_[i] == 0) continue;
          if (!skip_[i]) copy_block(dst + off, static_cast<const unsigned char*>(in[i].data) + static_cast<size_t>(o) * src_step_[i], block_[i]);
          off += block_[i];
        }
      }
    });
    return ok();
  }

 private:
  int axis_ = 0;
  size_t es_ = 4, out_block_ = 0;
  int64_t outer_ = 1;
  std::vector<size_t> block_, src_step_;  // bytes an outer block: each input's rows, and how far apart they are read
  std::vector<bool> skip_;
};

Result<std::vector<ValueType>> infer_concat(const OpContext& ctx) {
  if (ctx.inputs.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": needs inputs");
  SD_TRY(same_dtype(ctx));
  SD_ASSIGN_OR_RETURN(Shape out, concat_shape(ctx));
  return one_output(ctx.inputs[0].dtype, out);
}

// ---- Split
Result<std::vector<int64_t>> split_sizes(const OpContext& ctx, int& axis) {
  const Shape& in = ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(axis, normalize_axis(ctx.node.attrs.get_int("axis", 0), in.rank, ctx));
  std::vector<int64_t> sizes;
  if (ctx.opset >= 13) {
    if (has_input(ctx, 1)) { SD_ASSIGN_OR_RETURN(sizes, constant_ints(ctx, 1, "split")); }
  } else {
    sizes = ctx.node.attrs.get_ints("split");
  }
  const int64_t n = static_cast<int64_t>(ctx.node.outputs.size());
  const std::string extent = " (" + std::to_string(in[axis]) + ")";
  if (sizes.empty()) {
    const int64_t parts = ctx.node.attrs.get_int("num_outputs", n);
    if (parts != n)
      return fail(ErrorCode::kModel, ctx.describe() + ": num_outputs " + std::to_string(parts) + " but " + std::to_string(n) + " outputs");
    const int64_t each = in[axis] / parts + (in[axis] % parts != 0);
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(each, in[axis] - i * each)));
  }
  // Sizes are checked one by one: a negative or huge one must not overflow the sum.
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > in[axis] - total)
      return fail(ErrorCode::kModel, ctx.describe() + ": split sizes do not add up to the axis" + extent);
    total += s;
  }
  if (total != in[axis] || static_cast<int64_t>(sizes.size()) != n)
    return fail(ErrorCode::kModel, ctx.describe() + ": split sizes do not add up to the axis" + extent);
  return sizes;
}

Result<std::vector<ValueType>> infer_split(const OpContext& ctx) {
  int axis = 0;
  SD_ASSIGN_OR_RETURN(auto sizes, split_sizes(ctx, axis));
  std::vector<ValueType> out;
  for (int64_t s : sizes) {
    ValueType v = ctx.inputs[0];
    v.shape[axis] = s;
    out.push_back(v);
  }
  return out;
}

class SplitKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    int axis = 0;
    SD_ASSIGN_OR_RETURN(auto sizes, split_sizes(ctx, axis));
    const Shape& in = ctx.inputs[0].shape;
    es_ = dtype_size(ctx.inputs[0].dtype);
    outer_ = 1;
    for (int i = 0; i < axis; ++i) outer_ *= in[i];
    int64_t inner = 1;
    for (int i = axis + 1; i < in.rank; ++i) inner *= in[i];
    for (int64_t s : sizes) block_.push_back(static_cast<size_t>(s * inner) * es_);
    in_block_ = static_cast<size_t>(in[axis] * inner) * es_;
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const auto* src = static_cast<const unsigned char*>(in[0].data);
    parallel_for(outer_, ctx.threads, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(in_block_, 1))), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        size_t off = static_cast<size_t>(o) * in_block_;
        for (size_t i = 0; i < out.size(); ++i) {
          if (out[i].data && block_[i]) copy_block(static_cast<unsigned char*>(out[i].data) + static_cast<size_t>(o) * block_[i], src + off, block_[i]);
          off += block_[i];
        }
      }
    });
    return ok();
  }

 private:
  size_t es_ = 4, in_block_ = 0;
  int64_t outer_ = 1;
  std::vector<size_t> block_;
};

// ---- Slice (slice_params: below, outside this namespace)
class SliceKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_ASSIGN_OR_RETURN(p_, slice_params(ctx));
    in_ = ctx.inputs[0].shape;
    es_ = dtype_size(ctx.inputs[0].dtype);
    st_ = contiguous_strides(in_);
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const Shape& o = p_.out;
    const int r = o.rank;
    if (o.numel() == 0) return ok();
    if (r == 0) { std::memcpy(out[0].data, in[0].data, es_); return ok(); }
    const auto* src = static_cast<const unsigned char*>(in[0].data);
    auto* dst = static_cast<unsigned char*>(out[0].data);
    const int64_t inner = o[r - 1];
    const int64_t outer = o.numel() / inner;
    const int64_t last_step = p_.step[static_cast<size_t>(r - 1)];
    // Rows over the threads (a Focus stem's four strided Slices of the image: 0.2 ms each on
    // one thread with a memcpy call per element, docs/benchmarks.md).
    parallel_for(outer, ctx.threads, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t rem = row, off = 0;
        for (int d = r - 2; d >= 0; --d) {
          int64_t idx = rem % o[d];
          rem /= o[d];
          off += (p_.start[static_cast<size_t>(d)] + idx * p_.step[static_cast<size_t>(d)]) * st_[static_cast<size_t>(d)];
        }
        off += p_.start[static_cast<size_t>(r - 1)];
        unsigned char* drow = dst + static_cast<size_t>(row * inner) * es_;
        const unsigned char* srow = src + static_cast<size_t>(off) * es_;
        if (last_step == 1) std::memcpy(drow, srow, static_cast<size_t>(inner) * es_);
        else strided_row(srow, drow, inner, last_step);
      }
    });
    return ok();
  }

 private:
  // inner elements of es_ bytes, every step-th of src (step may be negative), packed into dst.
  void strided_row(const unsigned char* src, unsigned char* dst, int64_t inner, int64_t step) const {
    auto typed = [&](auto element) {
      using T = decltype(element);
      T* d = reinterpret_cast<T*>(dst);
      for (int64_t i = 0; i < inner; ++i) std::memcpy(d + i, src + i * step * static_cast<int64_t>(sizeof(T)), sizeof(T));
    };
    switch (es_) {
      case 1: typed(uint8_t{}); break;
      case 2: typed(uint16_t{}); break;
      case 4: typed(uint32_t{}); break;
      case 8: typed(uint64_t{}); break;
      default:
        for (int64_t i = 0; i < inner; ++i) std::memcpy(dst + static_cast<size_t>(i) * es_, src + i * step * static_cast<int64_t>(es_), es_);
    }
  }

  SliceParams p_;
  Shape in_;
  size_t es_ = 4;
  std::array<int64_t, Shape::kMaxRank> st_{};
};

// ---- Gather (axis): out = data indexed along axis by indices
class GatherKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    const Shape& d = ctx.inputs[0].shape;
    SD_ASSIGN_OR_RETURN(axis_, normalize_axis(ctx.node.attrs.get_int("axis", 0), d.rank, ctx));
    es_ = dtype_size(ctx.inputs[0].dtype);
    idx_type_ = ctx.inputs[1].dtype;
    n_idx_ = ctx.inputs[1].shape.numel();
    outer_ = 1;
    for (int i = 0; i < axis_; ++i) outer_ *= d[i];
    inner_ = 1;
    for (int i = axis_ + 1; i < d.rank; ++i) inner_ *= d[i];
    dim_ = d[axis_];
    desc_ = ctx.describe();
    if (idx_type_ != DType::kInt64 && idx_type_ != DType::kInt32) return fail(ErrorCode::kModel, desc_ + ": indices must be int32 or int64");
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const auto* src = static_cast<const unsigned char*>(in[0].data);
    auto* dst = static_cast<unsigned char*>(out[0].data);
    const size_t row = static_cast<size_t>(inner_) * es_;
    for (int64_t j = 0; j < n_idx_; ++j) {
      int64_t k = idx_type_ == DType::kInt64 ? in[1].as<int64_t>()[j] : in[1].as<int32_t>()[j];
      if (k < 0) k += dim_;
      if (k < 0 || k >= dim_) return fail(ErrorCode::kModel, desc_ + ": index " + std::to_string(k) + " out of range");
      for (int64_t o = 0; o < outer_; ++o)
        std::memcpy(dst + (static_cast<size_t>(o * n_idx_ + j)) * row, src + static_cast<size_t>(o * dim_ + k) * row, row);
    }
    return ok();
  }

 private:
  int axis_ = 0;
  size_t es_ = 4;
  DType idx_type_ = DType::kInt64;
  int64_t n_idx_ = 0, outer_ = 1, inner_ = 1, dim_ = 0;
  std::string desc_;
};

Result<std::vector<ValueType>> infer_gather(const OpContext& ctx) {
  const Shape& d = ctx.inputs[0].shape;
  const Shape& idx = ctx.inputs[1].shape;
  SD_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node.attrs.get_int("axis", 0), d.rank, ctx));
  std::vector<int64_t> out;
  for (int i = 0; i < axis; ++i) out.push_back(d[i]);
  for (int i = 0; i < idx.rank; ++i) out.push_back(idx[i]);
  for (int i = axis + 1; i < d.rank; ++i) out.push_back(d[i]);
  if (out.size() > Shape::kMaxRank) return fail(ErrorCode::kUnsupported, ctx.describe() + ": rank too high");
  return one_output(ctx.inputs[0].dtype, shape_of(out));
}

// ---- Expand / Tile: a broadcast copy.
class BroadcastCopyKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    out_ = ctx.outputs[0].shape;
    es_ = dtype_size(ctx.outputs[0].dtype);
    const Shape& in = ctx.inputs[0].shape;
    if (ctx.node.op_type == "Tile") {
      tile_ = true;
      in_ = in;
      in_st_ = contiguous_strides(in);
    } else {
      st_ = broadcast_strides(in, out_);
    }
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    const auto* src = static_cast<const unsigned char*>(in[0].data);
    auto* dst = static_cast<unsigned char*>(out[0].data);
    const int64_t n = out_.numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = 0;
      for (int d = out_.rank - 1; d >= 0; --d) {
        int64_t idx = rem % out_[d];
        rem /= out_[d];
        off += tile_ ? (idx % in_[d]) * in_st_[static_cast<size_t>(d)] : idx * st_[static_cast<size_t>(d)];
      }
      std::memcpy(dst + static_cast<size_t>(i) * es_, src + static_cast<size_t>(off) * es_, es_);
    }
    return ok();
  }

 private:
  Shape out_, in_;
  size_t es_ = 4;
  bool tile_ = false;
  std::array<int64_t, Shape::kMaxRank> st_{}, in_st_{};
};

Result<std::vector<ValueType>> infer_expand(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(auto target, constant_ints(ctx, 1, "shape"));
  if (target.size() > static_cast<size_t>(Shape::kMaxRank)) return fail(ErrorCode::kUnsupported, ctx.describe() + ": rank too high");
  SD_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.inputs[0].shape, shape_of(target), ctx));
  return one_output(ctx.inputs[0].dtype, out);
}

Result<std::vector<ValueType>> infer_tile(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(auto reps, constant_ints(ctx, 1, "repeats"));
  Shape out = ctx.inputs[0].shape;
  if (static_cast<int>(reps.size()) != out.rank) return fail(ErrorCode::kModel, ctx.describe() + ": repeats do not match the rank");
  for (int i = 0; i < out.rank; ++i)
    if (reps[static_cast<size_t>(i)] < 0 || __builtin_mul_overflow(out[i], reps[static_cast<size_t>(i)], &out[i]))
      return fail(ErrorCode::kModel, ctx.describe() + ": bad repeats");
  return one_output(ctx.inputs[0].dtype, out);
}

// ---- Cast
template <class To>
void cast_to(const TensorRef& in, To* out) {
  const int64_t n = in.numel();
  switch (in.dtype) {
    case DType::kFloat32: for (int64_t i = 0; i < n; ++i) out[i] = saturate_cast<To>(in.as<float>()[i]); break;
    case DType::kFloat64: for (int64_t i = 0; i < n; ++i) out[i] = saturate_cast<To>(in.as<double>()[i]); break;
    case DType::kInt64: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in.as<int64_t>()[i]); break;
    case DType::kInt32: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in.as<int32_t>()[i]); break;
    case DType::kInt8: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in.as<int8_t>()[i]); break;
    case DType::kUInt8: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in.as<uint8_t>()[i]); break;
    case DType::kBool: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in.as<bool>()[i]); break;
    default: break;
  }
}

class CastKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    to_ = ctx.outputs[0].dtype;
    if (to_ == DType::kFloat16 || ctx.inputs[0].dtype == DType::kFloat16)
      return fail(ErrorCode::kUnsupported, ctx.describe() + ": float16 is not supported");
    return ok();
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    switch (to_) {
      case DType::kFloat32: cast_to(in[0], out[0].as<float>()); break;
      case DType::kFloat64: cast_to(in[0], out[0].as<double>()); break;
      case DType::kInt64: cast_to(in[0], out[0].as<int64_t>()); break;
      case DType::kInt32: cast_to(in[0], out[0].as<int32_t>()); break;
      case DType::kInt8: cast_to(in[0], out[0].as<int8_t>()); break;
      case DType::kUInt8: cast_to(in[0], out[0].as<uint8_t>()); break;
      case DType::kBool: {
        const int64_t n = in[0].numel();
        std::vector<double> tmp(static_cast<size_t>(n));
        cast_to(in[0], tmp.data());
        for (int64_t i = 0; i < n; ++i) out[0].as<bool>()[i] = tmp[static_cast<size_t>(i)] != 0;
        break;
      }
      default: break;
    }
    return ok();
  }

 private:
  DType to_ = DType::kFloat32;
};

Result<std::vector<ValueType>> infer_cast(const OpContext& ctx) {
  auto to = dtype_from_onnx(static_cast<int32_t>(ctx.node.attrs.get_int("to", 1)));
  if (!to) return fail(to.error().code, ctx.describe() + ": " + to.error().message);
  return one_output(*to, ctx.inputs[0].shape);
}

// ---- ConstantOfShape / Range / Constant
class FillKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    if (ctx.node.op_type == "ConstantOfShape") {
      const Attribute* v = ctx.node.attrs.find("value");
      value_ = v && v->kind == Attribute::Kind::kTensor ? v->t : HostTensor(DType::kFloat32, Shape{1});
    } else {
      value_ = constant_value(ctx);
    }
    return ok();
  }
  static HostTensor constant_value(const OpContext& ctx) {
    const auto& a = ctx.node.attrs;
    if (const Attribute* t = a.find("value"); t && t->kind == Attribute::Kind::kTensor) return t->t;
    if (const Attribute* f = a.find("value_float")) { HostTensor h(DType::kFloat32, Shape{}); h.as<float>()[0] = f->f; return h; }
    if (const Attribute* fs = a.find("value_floats")) {
      HostTensor h(DType::kFloat32, Shape{static_cast<int64_t>(fs->floats.size())});
      std::copy(fs->floats.begin(), fs->floats.end(), h.as<float>());
      return h;
    }
    if (const Attribute* i = a.find("value_int")) { HostTensor h(DType::kInt64, Shape{}); h.as<int64_t>()[0] = i->i; return h; }
    if (const Attribute* is = a.find("value_ints")) {
      HostTensor h(DType::kInt64, Shape{static_cast<int64_t>(is->ints.size())});
      std::copy(is->ints.begin(), is->ints.end(), h.as<int64_t>());
      return h;
    }
    return HostTensor();
  }
  Status run(std::span<const TensorRef>, std::span<const TensorRef> out, const ExecContext&) override {
    const size_t es = dtype_size(out[0].dtype);
    auto* dst = static_cast<unsigned char*>(out[0].data);
    if (out[0].numel() == value_.numel()) {
      std::memcpy(dst, value_.data(), out[0].bytes());
      return ok();
    }
    for (int64_t i = 0; i < out[0].numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * es, value_.data(), es);
    return ok();
  }

 private:
  HostTensor value_;
};

Result<std::vector<ValueType>> infer_constant_of_shape(const OpContext& ctx) {
  SD_ASSIGN_OR_RETURN(auto dims, constant_ints(ctx, 0, "shape"));
  if (dims.size() > static_cast<size_t>(Shape::kMaxRank)) return fail(ErrorCode::kUnsupported, ctx.describe() + ": rank too high");
  for (int64_t d : dims)
    if (d < 0) return fail(ErrorCode::kModel, ctx.describe() + ": negative dimension");
  const Attribute* v = ctx.node.attrs.find("value");
  DType t = v && v->kind == Attribute::Kind::kTensor ? v->t.dtype() : DType::kFloat32;
  return one_output(t, shape_of(dims));
}

Result<std::vector<ValueType>> infer_constant(const OpContext& ctx) {
  HostTensor v = FillKernel::constant_value(ctx);
  if (v.empty()) return fail(ErrorCode::kUnsupported, ctx.describe() + ": unsupported value attribute");
  return one_output(v.dtype(), v.shape());
}

class RangeKernel : public Kernel {
 public:
  Status init(const OpContext&) { return ok(); }
  template <class T>
  static void fill(const std::span<const TensorRef>& in, const TensorRef& out) {
    T start = in[0].as<T>()[0], delta = in[2].as<T>()[0];
    for (int64_t i = 0; i < out.numel(); ++i) out.as<T>()[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext&) override {
    switch (out[0].dtype) {
      case DType::kFloat32: fill<float>(in, out[0]); break;
      case DType::kInt64: fill<int64_t>(in, out[0]); break;
      case DType::kInt32: fill<int32_t>(in, out[0]); break;
      case DType::kFloat64: fill<double>(in, out[0]); break;
      default: break;
    }
    return ok();
  }
};

Result<std::vector<ValueType>> infer_range(const OpContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.constants[i]) return fail(ErrorCode::kUnsupported, ctx.describe() + ": start/limit/delta must be known when the model is planned");
  SD_TRY(same_dtype(ctx, {0, 1, 2}, 0, true));
  auto v = [&](size_t i) { return ctx.constants[i]->to_float_vector().at(0); };
  double start = ctx.constants[0]->dtype() == DType::kFloat32 ? v(0) : static_cast<double>(ctx.constants[0]->to_int64_vector()[0]);
  double limit = ctx.constants[1]->dtype() == DType::kFloat32 ? v(1) : static_cast<double>(ctx.constants[1]->to_int64_vector()[0]);
  double delta = ctx.constants[2]->dtype() == DType::kFloat32 ? v(2) : static_cast<double>(ctx.constants[2]->to_int64_vector()[0]);
  if (delta == 0) return fail(ErrorCode::kModel, ctx.describe() + ": delta 0");
  const double count = std::ceil((limit - start) / delta);
  if (!(count < 1e10)) return fail(ErrorCode::kModel, ctx.describe() + ": the range is too long");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  return one_output(ctx.inputs[0].dtype, Shape{n});
}

}  // namespace

Result<SliceParams> slice_params(const OpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.node.attrs.get_ints("starts");
    ends = ctx.node.attrs.get_ints("ends");
    axes = ctx.node.attrs.get_ints("axes");
  } else {
    SD_ASSIGN_OR_RETURN(starts, constant_ints(ctx, 1, "starts"));
    SD_ASSIGN_OR_RETURN(ends, constant_ints(ctx, 2, "ends"));
    if (has_input(ctx, 3)) { SD_ASSIGN_OR_RETURN(axes, constant_ints(ctx, 3, "axes")); }
    if (has_input(ctx, 4)) { SD_ASSIGN_OR_RETURN(steps, constant_ints(ctx, 4, "steps")); }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return fail(ErrorCode::kModel, ctx.describe() + ": starts/ends/axes/steps of different lengths");
  SliceParams p;
  p.out = in;
  for (int d = 0; d < in.rank; ++d) p.step[static_cast<size_t>(d)] = 1;
  for (size_t i = 0; i < starts.size(); ++i) {
    SD_ASSIGN_OR_RETURN(int ax, normalize_axis(axes[i], in.rank, ctx));
    const int64_t dim = in[ax], step = steps[i];
    if (step == 0) return fail(ErrorCode::kModel, ctx.describe() + ": step 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t n = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    p.out[ax] = std::max<int64_t>(0, n);
    p.start[static_cast<size_t>(ax)] = s;
    p.step[static_cast<size_t>(ax)] = step;
  }
  return p;
}


void register_shape_ops(OpRegistry& r) {
  r.add(schema("Shape", infer_shape_op, make_factory<ShapeKernel>()));
  r.add(schema("Size", infer_shape_op, make_factory<ShapeKernel>()));
  r.add(schema("Reshape", infer_reshape, make_factory<CopyKernel>()));
  r.add(schema("Flatten", infer_flatten, make_factory<CopyKernel>()));
  r.add(schema("Squeeze", infer_squeeze, make_factory<CopyKernel>()));
  r.add(schema("Unsqueeze", infer_unsqueeze, make_factory<CopyKernel>()));
  r.add(schema("Dropout", infer_dropout, make_factory<DropoutKernel>()));
  r.add(schema("Transpose", infer_transpose, make_factory<TransposeKernel>()));
  r.add(schema("Concat", infer_concat, make_factory<ConcatKernel>()));
  r.add(schema("Split", infer_split, make_factory<SplitKernel>()));
  r.add(schema("Slice", [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
    SD_ASSIGN_OR_RETURN(auto p, slice_params(ctx));
    return one_output(ctx.inputs[0].dtype, p.out);
  }, make_factory<SliceKernel>()));
  r.add(schema("Gather", infer_gather, make_factory<GatherKernel>()));
  r.add(schema("Expand", infer_expand, make_factory<BroadcastCopyKernel>()));
  r.add(schema("Tile", infer_tile, make_factory<BroadcastCopyKernel>()));
  r.add(schema("Cast", infer_cast, make_factory<CastKernel>()));
  r.add(schema("ConstantOfShape", infer_constant_of_shape, make_factory<FillKernel>()));
  r.add(schema("Constant", infer_constant, make_factory<FillKernel>()));
  r.add(schema("Range", infer_range, make_factory<RangeKernel>()));
}

}  // namespace sd::native::ops

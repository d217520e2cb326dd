// The int8 data path between convolutions (passes/int8_dataflow.cpp): a per-tensor quantized
// tensor has 256 possible values, so what the float graph computes from it element by element
// is a 256-entry table, filled by the pass with the same float arithmetic the ops it replaces
// do. Two ops (domain "streamdet"):
//  - Int8Table: y = table[byte of x], x int8/uint8. `out_dtype` 1 (float32: a DequantizeLinear,
//    or the SiLU of one) or 2 / 3 (uint8 / int8: that, then a QuantizeLinear; the table holds
//    the quantized integers).
//  - Int8AddTables: y = table_a[a] + table_b[b] (an Add of two such floats), float32, or
//    quantized as QuantizeLinear does (`out_scale`, `out_zero_point`, `out_dtype` 2 / 3).
//    Numpy broadcasting as Add; equal shapes (a residual Add) take the flat loop.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/native/cpu/byte_table_kernel.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/op_util.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

Result<std::array<float, 256>> table_attr(const OpContext& ctx, const char* name) {
  const auto v = ctx.node.attrs.get_floats(name);
  if (v.size() != 256) return fail(ErrorCode::kModel, ctx.describe() + ": '" + name + "' must hold 256 values");
  std::array<float, 256> t{};
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

Result<DType> out_type(const OpContext& ctx) {
  switch (ctx.node.attrs.get_int("out_dtype", 1)) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    default: return fail(ErrorCode::kModel, ctx.describe() + ": out_dtype must be 1, 2 or 3");
  }
}

Status check_bytes(const OpContext& ctx, size_t i) {
  if (ctx.inputs[i].dtype != DType::kUInt8 && ctx.inputs[i].dtype != DType::kInt8)
    return fail(ErrorCode::kModel, ctx.describe() + ": input " + std::to_string(i) + " must be int8 or uint8");
  return ok();
}

// QuantizeLinear's arithmetic (cpu/quant_ops.cpp): x / scale rounded half to even, plus the
// zero point, NaN to 0, saturated.
inline float quantized(float x, float s, float zf, float lo, float hi) {
  float r = __builtin_rintf(x / s) + zf;
  r = r == r ? r : 0.f;
  r = r < lo ? lo : r;
  return r > hi ? hi : r;
}

// The planner's strided destination (kDstPixelStride): rows of the output's last dimension `c`,
// `stride` elements apart; stride 0 where the destination is dense.
Status dst_rows(const OpContext& ctx, int64_t& c, int64_t& stride) {
  const Shape& s = ctx.outputs[0].shape;
  c = s.rank > 0 ? s[s.rank - 1] : 1;
  stride = ctx.node.attrs.get_int(kDstPixelStride, 0);
  if (stride == c) stride = 0;
  if (stride != 0 && (c <= 0 || stride < c)) return fail(ErrorCode::kInternal, ctx.describe() + ": a strided destination narrower than a row");
  return ok();
}

class Int8TableKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_TRY(check_bytes(ctx, 0));
    SD_ASSIGN_OR_RETURN(const auto t, table_attr(ctx, "table"));
    SD_ASSIGN_OR_RETURN(out_, out_type(ctx));
    ftab_ = t;
    lookup_ = byte_table::lookup_kernel(cpu::active_isa());
    lookup_float_ = byte_table::lookup_float_kernel(cpu::active_isa());
    identity_ = out_ == ctx.inputs[0].dtype;
    for (int b = 0; b < 256; ++b) {
      const auto q = static_cast<int32_t>(t[static_cast<size_t>(b)]);
      btab_[static_cast<size_t>(b)] = static_cast<uint8_t>(q);
      identity_ = identity_ && btab_[static_cast<size_t>(b)] == b;
    }
    SD_TRY(dst_rows(ctx, c_, stride_));
    // A strided source (kSrcPixelStride: its channels inside a Split's input, exec/plan_concat.cpp).
    src_stride_ = ctx.node.attrs.get_int(kSrcPixelStride, 0);
    if (src_stride_ == c_) src_stride_ = 0;
    if (src_stride_ != 0 && src_stride_ < c_) return fail(ErrorCode::kInternal, ctx.describe() + ": a strided source narrower than a row");
    lookup_rows_ = byte_table::lookup_rows_kernel(cpu::active_isa());
    return ok();
  }
  std::string implementation() const override {
    return identity_ ? "streamdet:copy" : out_ == DType::kFloat32 ? "streamdet:float_table" : "streamdet:byte_table";
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const auto* x = static_cast<const uint8_t*>(in[0].data);
    const int64_t n = in[0].numel();
    if (stride_ != 0 || src_stride_ != 0) return run_strided(x, n, out[0].data, ctx);
    if (out_ == DType::kFloat32) {
      auto* y = static_cast<float*>(out[0].data);
      parallel_for(n, ctx.threads, 16384, [&](int64_t b, int64_t e) { lookup_float_(x + b, y + b, e - b, ftab_.data()); });
    } else if (identity_) {
      if (out[0].data != in[0].data) std::memcpy(out[0].data, x, static_cast<size_t>(n));
    } else {
      auto* y = static_cast<uint8_t*>(out[0].data);
      parallel_for(n, ctx.threads, 65536, [&](int64_t b, int64_t e) { lookup_(x + b, y + b, e - b, btab_.data()); });
    }
    return ok();
  }

 private:
  // Rows of c_ elements read xs apart (kSrcPixelStride) and written ys apart (kDstPixelStride).
  Status run_strided(const uint8_t* x, int64_t n, void* out, const ExecContext& ctx) const {
    const int64_t rows = n / c_, xs = src_stride_ != 0 ? src_stride_ : c_, ys = stride_ != 0 ? stride_ : c_;
    parallel_for(rows, ctx.threads, std::max<int64_t>(1, 16384 / c_), [&](int64_t b, int64_t e) {
      if (out_ == DType::kFloat32) {
        auto* y = static_cast<float*>(out);
        for (int64_t r = b; r < e; ++r) lookup_float_(x + r * xs, y + r * ys, c_, ftab_.data());
      } else if (identity_) {
        auto* y = static_cast<uint8_t*>(out);
        for (int64_t r = b; r < e; ++r) std::memcpy(y + r * ys, x + r * xs, static_cast<size_t>(c_));
      } else {
        lookup_rows_(x + b * xs, xs, static_cast<uint8_t*>(out) + b * ys, ys, e - b, c_, btab_.data());
      }
    });
    return ok();
  }

  DType out_ = DType::kFloat32;
  int64_t c_ = 1, stride_ = 0;  // a strided destination: row length and stride (0: dense)
  int64_t src_stride_ = 0;       // a strided source (0: dense)
  byte_table::LookupRowsFn lookup_rows_ = byte_table::lookup_rows_baseline;
  bool identity_ = false;
  std::array<float, 256> ftab_{};
  std::array<uint8_t, 256> btab_{};
  byte_table::LookupFn lookup_ = byte_table::lookup_baseline;
  byte_table::LookupFloatFn lookup_float_ = byte_table::lookup_float_baseline;
};

class Int8AddTablesKernel : public Kernel {
 public:
  Status init(const OpContext& ctx) {
    SD_TRY(check_bytes(ctx, 0));
    SD_TRY(check_bytes(ctx, 1));
    SD_ASSIGN_OR_RETURN(ta_, table_attr(ctx, "table_a"));
    SD_ASSIGN_OR_RETURN(tb_, table_attr(ctx, "table_b"));
    // A third input (passes/int8_dataflow.cpp: an Add of an Int8AddTables' floats and a third
    // table's): (ta[a] + tb[b]) + tc[c], every input of the output's shape.
    three_ = ctx.inputs.size() > 2;
    if (three_) {
      SD_TRY(check_bytes(ctx, 2));
      SD_ASSIGN_OR_RETURN(tc_, table_attr(ctx, "table_c"));
      if (ctx.inputs[2].shape != ctx.outputs[0].shape) return fail(ErrorCode::kUnsupported, ctx.describe() + ": a third input that broadcasts");
      add3_float_ = byte_table::add3_float_kernel(cpu::active_isa());
      add3_bytes_ = byte_table::add3_bytes_kernel(cpu::active_isa());
    }
    SD_ASSIGN_OR_RETURN(out_, out_type(ctx));
    s_ = ctx.node.attrs.get_float("out_scale", 1.f);
    zf_ = static_cast<float>(ctx.node.attrs.get_int("out_zero_point", 0));
    if (out_ != DType::kFloat32 && !(s_ > 0.f && std::isfinite(s_))) return fail(ErrorCode::kModel, ctx.describe() + ": bad out_scale");
    lo_ = out_ == DType::kInt8 ? -128.f : 0.f;
    hi_ = out_ == DType::kInt8 ? 127.f : 255.f;
    q_ = {s_, zf_, lo_, hi_};
    add_float_ = byte_table::add_float_kernel(cpu::active_isa());
    out_shape_ = ctx.outputs[0].shape;
    flat_ = ctx.inputs[0].shape == out_shape_ && ctx.inputs[1].shape == out_shape_;
    if (three_ && !flat_) return fail(ErrorCode::kUnsupported, ctx.describe() + ": three inputs that broadcast");
#if defined(__x86_64__)
    if (flat_ && out_ != DType::kFloat32 && cpu::active_isa() >= cpu::Isa::kAvx512 && byte_table::has_vbmi()) {
      planes_.resize(3);  // the tables as byte planes, looked up in registers, no gather (byte_table_kernel.h)
      planes_[0] = byte_table::byte_planes(ta_.data());
      planes_[1] = byte_table::byte_planes(tb_.data());
      if (three_) planes_[2] = byte_table::byte_planes(tc_.data());
    }
#endif
    if (flat_ && out_ != DType::kFloat32 && !three_ && planes_.empty()) {  // one lookup per element instead of two, a divide and a rounding
      pairs_.resize(byte_table::kPairTableBytes);
      byte_table::fill_pair_table(ta_.data(), tb_.data(), q_, pairs_.data());
      add_pairs_ = byte_table::add_pairs_kernel(cpu::active_isa());
    }
    sa_ = broadcast_strides(ctx.inputs[0].shape, out_shape_);
    sb_ = broadcast_strides(ctx.inputs[1].shape, out_shape_);
    SD_TRY(dst_rows(ctx, c_, stride_));
    if (stride_ != 0 && !flat_) return fail(ErrorCode::kInternal, ctx.describe() + ": a strided destination needs inputs of the output's shape");
    // Strided sources (kSrcPixelStrides: a Split's part read in its input, exec/plan_concat.cpp).
    auto sources = ctx.node.attrs.get_ints(kSrcPixelStrides);
    sources.resize(3, 0);
    for (size_t i = 0; i < 3; ++i) {
      src_stride_[i] = sources[i] == c_ ? 0 : sources[i];
      if (src_stride_[i] == 0) continue;
      if (!flat_) return fail(ErrorCode::kUnsupported, ctx.describe() + ": a strided source needs inputs of the output's shape");
      if (src_stride_[i] < c_) return fail(ErrorCode::kInternal, ctx.describe() + ": a strided source narrower than a row");
    }
    return ok();
  }
  std::string implementation() const override {
    if (!planes_.empty()) return three_ ? "streamdet:add_three_planes" : "streamdet:add_planes";
    return three_ ? "streamdet:add_three_tables" : pairs_.empty() ? "streamdet:add_tables" : "streamdet:add_pair_table";
  }
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    const auto* a = static_cast<const uint8_t*>(in[0].data);
    const auto* b = static_cast<const uint8_t*>(in[1].data);
    const int64_t n = out[0].numel();
    if (!planes_.empty()) return run_planes(in, out[0], ctx);
    if (three_) {  // flat (init checked): [s, e) of rows of c_ elements, each read and written at its stride
      const auto* c = static_cast<const uint8_t*>(in[2].data);
      const int64_t ys = stride_ != 0 ? stride_ : c_, as = src_stride_[0] != 0 ? src_stride_[0] : c_,
                    bs = src_stride_[1] != 0 ? src_stride_[1] : c_, cs = src_stride_[2] != 0 ? src_stride_[2] : c_;
      auto add3 = [&](int64_t ra, int64_t rb, int64_t rc, int64_t ry, int64_t len) {
        if (out_ == DType::kFloat32)
          add3_float_(a + ra, b + rb, c + rc, len, ta_.data(), tb_.data(), tc_.data(), static_cast<float*>(out[0].data) + ry);
        else
          add3_bytes_(a + ra, b + rb, c + rc, len, ta_.data(), tb_.data(), tc_.data(), q_, static_cast<uint8_t*>(out[0].data) + ry);
      };
      if (ys == c_ && as == c_ && bs == c_ && cs == c_) {  // dense: any stretch of elements
        parallel_for(n, ctx.threads, 16384, [&](int64_t s, int64_t e) { add3(s, s, s, s, e - s); });
        return ok();
      }
      parallel_for(n / c_, ctx.threads, std::max<int64_t>(1, 16384 / c_), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) add3(r * as, r * bs, r * cs, r * ys, c_);
      });
      return ok();
    }
    if (stride_ != 0 || src_stride_[0] != 0 || src_stride_[1] != 0) {  // rows of c_ elements (kDstPixelStride, kSrcPixelStrides)
      const int64_t ys = stride_ != 0 ? stride_ : c_, as = src_stride_[0] != 0 ? src_stride_[0] : c_,
                    bs = src_stride_[1] != 0 ? src_stride_[1] : c_;
      parallel_for(n / c_, ctx.threads, std::max<int64_t>(1, 16384 / c_), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const uint8_t *ra = a + r * as, *rb = b + r * bs;
          if (out_ == DType::kFloat32) add_float_(ra, rb, c_, ta_.data(), tb_.data(), static_cast<float*>(out[0].data) + r * ys);
          else if (!pairs_.empty()) add_pairs_(ra, rb, c_, pairs_.data(), static_cast<uint8_t*>(out[0].data) + r * ys);
        }
      });
      return ok();
    }
    auto offsets = [&](int64_t i, int64_t& ia, int64_t& ib) {  // the broadcast inputs' elements of output i
      ia = ib = 0;
      for (int d = out_shape_.rank - 1; d >= 0; --d) {
        const int64_t k = i % out_shape_[d];
        i /= out_shape_[d];
        ia += k * sa_[static_cast<size_t>(d)], ib += k * sb_[static_cast<size_t>(d)];
      }
    };
    parallel_for(n, ctx.threads, 16384, [&](int64_t s, int64_t e) {
      if (out_ == DType::kFloat32) {
        auto* y = static_cast<float*>(out[0].data);
        if (flat_) {
          add_float_(a + s, b + s, e - s, ta_.data(), tb_.data(), y + s);
        } else {
          for (int64_t i = s, ia, ib; i < e; ++i) offsets(i, ia, ib), y[i] = ta_[a[ia]] + tb_[b[ib]];
        }
        return;
      }
      auto* y = static_cast<uint8_t*>(out[0].data);
      const bool sgn = out_ == DType::kInt8;
      auto store = [&](int64_t i, float v) {
        const auto q = static_cast<int32_t>(quantized(v, s_, zf_, lo_, hi_));
        y[i] = sgn ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
      };
      if (flat_) {
        add_pairs_(a + s, b + s, e - s, pairs_.data(), y + s);
      } else {
        for (int64_t i = s, ia, ib; i < e; ++i) offsets(i, ia, ib), store(i, ta_[a[ia]] + tb_[b[ib]]);
      }
    });
    return ok();
  }

 private:
  // Bytes out by the byte planes (init: flat, AVX-512 with VBMI), dense or in rows at strides.
  Status run_planes([[maybe_unused]] std::span<const TensorRef> in, [[maybe_unused]] const TensorRef& out,
                    [[maybe_unused]] const ExecContext& ctx) const {
#if defined(__x86_64__)
    const uint8_t* const src[3] = {static_cast<const uint8_t*>(in[0].data), static_cast<const uint8_t*>(in[1].data),
                                   three_ ? static_cast<const uint8_t*>(in[2].data) : nullptr};
    auto* y = static_cast<uint8_t*>(out.data);
    const int64_t n = out.numel(), ys = stride_ != 0 ? stride_ : c_;
    const int64_t xs[3] = {src_stride_[0] != 0 ? src_stride_[0] : c_, src_stride_[1] != 0 ? src_stride_[1] : c_,
                           src_stride_[2] != 0 ? src_stride_[2] : c_};
    if (ys == c_ && xs[0] == c_ && xs[1] == c_ && xs[2] == c_) {  // dense: any stretch of elements
      parallel_for(n, ctx.threads, 16384, [&](int64_t s, int64_t e) {
        byte_table::add_planes_avx512_vbmi(src[0] + s, src[1] + s, three_ ? src[2] + s : nullptr, e - s, planes_[0], planes_[1], planes_[2],
                                           q_, y + s);
      });
      return ok();
    }
    parallel_for(n / c_, ctx.threads, std::max<int64_t>(1, 16384 / c_), [&](int64_t r0, int64_t r1) {
      const uint8_t* const at[3] = {src[0] + r0 * xs[0], src[1] + r0 * xs[1], three_ ? src[2] + r0 * xs[2] : nullptr};
      byte_table::add_planes_rows_avx512_vbmi(at, xs, r1 - r0, c_, planes_[0], planes_[1], planes_[2], q_, y + r0 * ys, ys);
    });
#endif
    return ok();
  }

  std::array<float, 256> ta_{}, tb_{}, tc_{};
  bool three_ = false;  // a third input and table_c
  byte_table::Add3FloatFn add3_float_ = byte_table::add3_float_baseline;
  byte_table::Add3BytesFn add3_bytes_ = byte_table::add3_bytes_baseline;
  DType out_ = DType::kFloat32;
  float s_ = 1.f, zf_ = 0.f, lo_ = 0.f, hi_ = 255.f;
  Shape out_shape_;
  bool flat_ = true;
  int64_t c_ = 1, stride_ = 0;  // a strided destination: row length and stride (0: dense)
  std::array<int64_t, 3> src_stride_{};  // strided sources a, b and c (0: dense)
  std::array<int64_t, Shape::kMaxRank> sa_{}, sb_{};
  byte_table::AddTables q_;
  byte_table::AddFloatFn add_float_ = byte_table::add_float_baseline;
  std::vector<uint8_t> pairs_;  // the quantized sum of every pair of bytes (byte_table_kernel.h)
  byte_table::AddPairsFn add_pairs_ = byte_table::add_pairs_baseline;
  std::vector<byte_table::BytePlanes> planes_;  // tables a, b and c as byte planes: AVX-512 with VBMI only
};

}  // namespace

void register_int8_table_ops(OpRegistry& r) {
  r.add(make_schema(
      "Int8Table",
      [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
        SD_ASSIGN_OR_RETURN(const DType t, out_type(ctx));
        return one_output(t, ctx.inputs[0].shape);
      },
      make_factory<Int8TableKernel>(), 1));
  r.add(make_schema(
      "Int8AddTables",
      [](const OpContext& ctx) -> Result<std::vector<ValueType>> {
        SD_ASSIGN_OR_RETURN(const DType t, out_type(ctx));
        SD_ASSIGN_OR_RETURN(const Shape s, broadcast_shapes(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx));
        return one_output(t, s);
      },
      make_factory<Int8AddTablesKernel>(), 2));
}

}  // namespace sd::native::ops

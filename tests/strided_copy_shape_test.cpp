// The CUDA backend's copy reshaping (strided_copy_shape.h), on the host: a copy simplified and
// widened moves exactly the bytes the original does, walked naively here over random Slices,
// Transposes, Concat parts and Split parts; it widens where the fp16 YOLOv8n layouts allow; and a
// few channels' NCHW to NHWC conversion is recognised as an interleave that moves the same bytes.
#include <gtest/gtest.h>

#ifdef STREAMDET_HAVE_CUDA

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "engine/native/cuda/strided_copy_shape.h"

namespace sd::native::cuda {
namespace {

// The copy as the kernel does it, unit by unit (unit: bytes per index), on byte buffers.
void walk(const StridedCopy& c, size_t unit, const std::vector<uint8_t>& src, std::vector<uint8_t>& dst) {
  int64_t total = 1;
  for (int k = 0; k < c.rank; ++k) total *= c.dims[k];
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, s = c.src_offset, d = c.dst_offset;
    for (int k = c.rank - 1; k >= 0; --k) {
      const int64_t idx = rest % c.dims[k];
      rest /= c.dims[k];
      s += idx * c.src_strides[k], d += idx * c.dst_strides[k];
    }
    std::memcpy(&dst[static_cast<size_t>(d) * unit], &src[static_cast<size_t>(s) * unit], unit);
  }
}

// A random 4-D copy between a source and a destination tensor: a slice of the source (offsets,
// strides, maybe a permutation) into a slice of the destination (a Concat part, a Split part).
struct Case {
  StridedCopy copy;
  size_t src_elems = 0, dst_elems = 0;
};

Case random_case(std::mt19937& rng, int64_t channel_multiple) {
  std::uniform_int_distribution<int> small(1, 5);
  const int64_t n = small(rng), h = small(rng), w = small(rng), c = channel_multiple * small(rng);
  // Source [n, h, w, cs] with c of its channels taken from channel offset cs0; destination
  // [n, h, w, cd] written at channel offset cd0 (NHWC Concat/Split parts).
  const int64_t cs0 = channel_multiple * (rng() % 3), cd0 = channel_multiple * (rng() % 3);
  const int64_t cs = cs0 + c + channel_multiple * (rng() % 2), cd = cd0 + c + channel_multiple * (rng() % 2);
  Case k;
  StridedCopy& p = k.copy;
  p.rank = 4;
  const int64_t dims[4] = {n, h, w, c};
  const int64_t ss[4] = {h * w * cs, w * cs, cs, 1}, ds[4] = {h * w * cd, w * cd, cd, 1};
  std::vector<int> order{0, 1, 2, 3};
  if (rng() % 3 == 0) std::shuffle(order.begin(), order.end(), rng);  // a Transpose's walk
  for (int i = 0; i < 4; ++i) p.dims[i] = dims[order[i]], p.src_strides[i] = ss[order[i]], p.dst_strides[i] = ds[order[i]];
  p.src_offset = cs0, p.dst_offset = cd0;
  k.src_elems = static_cast<size_t>(n * h * w * cs), k.dst_elems = static_cast<size_t>(n * h * w * cd);
  return k;
}

TEST(StridedCopyShape, SimplifiedAndWidenedCopiesMoveTheSameBytes) {
  std::mt19937 rng(7);
  int widened = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t multiple = std::vector<int64_t>{1, 3, 8, 16}[trial % 4];
    const Case k = random_case(rng, multiple);
    const size_t es = 2;  // fp16
    std::vector<uint8_t> src(k.src_elems * es);
    std::iota(src.begin(), src.end(), uint8_t{1});
    std::vector<uint8_t> want(k.dst_elems * es, 0xEE), got(k.dst_elems * es, 0xEE);
    walk(k.copy, es, src, want);
    const StridedCopy simple = simplify_copy(k.copy);
    EXPECT_LE(simple.rank, k.copy.rank);
    walk(simple, es, src, got);
    ASSERT_EQ(got, want) << "simplified, trial " << trial;
    for (size_t vb : {16, 8, 4}) {
      auto w = widen_copy(simple, es, vb, 0, 0);
      if (!w) continue;
      ++widened;
      std::fill(got.begin(), got.end(), 0xEE);
      walk(*w, vb, src, got);
      ASSERT_EQ(got, want) << "widened to " << vb << " bytes, trial " << trial;
    }
  }
  EXPECT_GT(widened, 100);  // the channel multiples of 8 and 16 widen
}

TEST(StridedCopyShape, WidensOnlyWhereTheLayoutAndAddressesAllow) {
  // A Concat part of YOLOv8n's C2f in fp16 NHWC: 16 of 48 channels at offset 16, 80x80, batch 2.
  StridedCopy c;
  c.rank = 4;
  const int64_t dims[4] = {2, 80, 80, 16}, ss[4] = {80 * 80 * 16, 80 * 16, 16, 1}, ds[4] = {80 * 80 * 48, 80 * 48, 48, 1};
  for (int i = 0; i < 4; ++i) c.dims[i] = dims[i], c.src_strides[i] = ss[i], c.dst_strides[i] = ds[i];
  c.dst_offset = 16;
  const StridedCopy s = simplify_copy(c);
  EXPECT_EQ(s.rank, 2);  // n, h, w merged on the source side and the destination side alike
  auto w = widen_copy(s, 2, 16, 0, 256);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->dims[w->rank - 1], 2);  // 16 halves: two 16-byte units
  EXPECT_EQ(w->dst_offset, 2);
  EXPECT_FALSE(widen_copy(s, 2, 16, 0, 2));  // a destination address off the 16-byte grid
  c.dst_offset = 4;                          // a part at channel 4: not on the unit's grid
  EXPECT_FALSE(widen_copy(simplify_copy(c), 2, 16, 0, 0));
  EXPECT_TRUE(widen_copy(simplify_copy(c), 2, 8, 0, 0));
  // A whole contiguous tensor: one dimension.
  StridedCopy whole;
  whole.rank = 3;
  const int64_t wd[3] = {4, 5, 6};
  for (int i = 0; i < 3; ++i) whole.dims[i] = wd[i], whole.src_strides[i] = whole.dst_strides[i] = (i == 0 ? 30 : i == 1 ? 6 : 1);
  EXPECT_EQ(simplify_copy(whole).rank, 1);
  EXPECT_EQ(simplify_copy(whole).dims[0], 120);
  // A reversed innermost walk never widens.
  StridedCopy rev = whole;
  rev.src_strides[2] = -1, rev.src_offset = 5;
  EXPECT_FALSE(widen_copy(simplify_copy(rev), 2, 4, 0, 0));
}

// The interleave kernel's walk (data_kernels.cu), on the host: a pixel's k elements at a time.
void walk_interleave(const InterleaveCopy& t, size_t unit, const std::vector<uint8_t>& src, std::vector<uint8_t>& dst) {
  for (int64_t i = 0; i < t.n * t.p; ++i) {
    const int64_t n = i / t.p, px = i - n * t.p;
    for (int64_t j = 0; j < t.k; ++j) {
      const int64_t s = t.src_offset + n * t.k * t.p + j * t.p + px, d = t.dst_offset + n * t.k * t.p + px * t.k + j;
      std::memcpy(&dst[static_cast<size_t>(d) * unit], &src[static_cast<size_t>(s) * unit], unit);
    }
  }
}

// The layout conversion of an [n, c, h, w] tensor to NHWC, as create_transpose builds it (the
// output's dimensions in order, the source's strides permuted by [0, 2, 3, 1]).
StridedCopy nchw_to_nhwc(int64_t n, int64_t c, int64_t h, int64_t w) {
  StridedCopy t;
  t.rank = 4;
  const int64_t dims[4] = {n, h, w, c}, src[4] = {c * h * w, w, 1, h * w}, dst[4] = {h * w * c, w * c, c, 1};
  for (int i = 0; i < 4; ++i) t.dims[i] = dims[i], t.src_strides[i] = src[i], t.dst_strides[i] = dst[i];
  return t;
}

// A model's input conversion (3 channels, and 2 to 8) goes to the interleave kernel, which moves
// the bytes the strided copy moves; 1 channel is a plain copy, more than 8 and the reverse
// direction stay strided copies, and no random Slice/Concat/Split part is taken for one wrongly.
TEST(StridedCopyShape, PlanarToInterleavedCopiesTakeTheInterleaveKernel) {
  const size_t es = 2;
  for (int64_t c = 1; c <= 10; ++c)
    for (const int64_t n : {1, 2, 3}) {
      const StridedCopy copy = nchw_to_nhwc(n, c, 5, 7);
      const auto t = as_interleave(simplify_copy(copy), 8);
      EXPECT_EQ(t.has_value(), c >= 2 && c <= 8) << "c " << c << " n " << n;
      if (!t) continue;
      EXPECT_EQ(t->n, n);
      EXPECT_EQ(t->p, 35);
      EXPECT_EQ(t->k, c);
      const size_t elems = static_cast<size_t>(n * c * 35);
      std::vector<uint8_t> src(elems * es);
      std::iota(src.begin(), src.end(), uint8_t{1});
      std::vector<uint8_t> want(elems * es, 0xEE), got(elems * es, 0xEE);
      walk(copy, es, src, want);
      walk_interleave(*t, es, src, got);
      ASSERT_EQ(got, want) << "c " << c << " n " << n;
    }
  // YOLOv8n's input at batch 64: one interleave of 64 x 409600 pixels of 3.
  const auto big = as_interleave(simplify_copy(nchw_to_nhwc(64, 3, 640, 640)), 8);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->n * big->p, 64 * 640 * 640);
  // NHWC back to NCHW: the channels are the source's inner dimension, not an interleave.
  StridedCopy back;
  back.rank = 4;
  const int64_t dims[4] = {2, 3, 5, 7}, src[4] = {105, 1, 21, 3}, dst[4] = {105, 35, 7, 1};
  for (int i = 0; i < 4; ++i) back.dims[i] = dims[i], back.src_strides[i] = src[i], back.dst_strides[i] = dst[i];
  EXPECT_FALSE(as_interleave(simplify_copy(back), 8));
  // A conversion read from inside a larger buffer and written at an offset of another (a part of
  // a bigger allocation): the offsets travel with the interleave.
  {
    StridedCopy at = nchw_to_nhwc(2, 3, 5, 7);
    at.src_offset = 11, at.dst_offset = 13;
    const auto t = as_interleave(simplify_copy(at), 8);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->src_offset, 11);
    EXPECT_EQ(t->dst_offset, 13);
    const size_t elems = 2 * 3 * 35;
    std::vector<uint8_t> s((elems + 11) * es);
    std::iota(s.begin(), s.end(), uint8_t{5});
    std::vector<uint8_t> want((elems + 13) * es, 0xEE), got((elems + 13) * es, 0xEE);
    walk(at, es, s, want);
    walk_interleave(*t, es, s, got);
    ASSERT_EQ(got, want);
    // Three planes into channels 2..4 of a 5-channel NHWC tensor (a Concat part): the
    // destination's pixels are 5 apart, not 3, which the interleave kernel does not write.
    StridedCopy part = nchw_to_nhwc(2, 3, 5, 7);
    part.dst_strides[0] = 35 * 5, part.dst_strides[1] = 7 * 5, part.dst_strides[2] = 5, part.dst_offset = 2;
    EXPECT_FALSE(as_interleave(simplify_copy(part), 8));
  }
  // Random copies: any taken for an interleave moves the same bytes.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const Case k = random_case(rng, std::vector<int64_t>{1, 3, 8, 16}[trial % 4]);
    const auto t = as_interleave(simplify_copy(k.copy), 8);
    if (!t) continue;
    std::vector<uint8_t> s(k.src_elems * es);
    std::iota(s.begin(), s.end(), uint8_t{3});
    std::vector<uint8_t> want(k.dst_elems * es, 0xEE), got(k.dst_elems * es, 0xEE);
    walk(k.copy, es, s, want);
    walk_interleave(*t, es, s, got);
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

// 32-bit index arithmetic only where every index the kernel computes fits, with room for the
// grid-stride loop's last step.
TEST(StridedCopyShape, ThirtyTwoBitIndicesOnlyWhereEveryIndexFits) {
  EXPECT_TRUE(fits_32bit_index(nchw_to_nhwc(64, 3, 640, 640)));  // 78.6M elements
  EXPECT_TRUE(fits_32bit_index(nchw_to_nhwc(1, 80, 8400, 1)));
  EXPECT_FALSE(fits_32bit_index(nchw_to_nhwc(1024, 3, 640, 640)));  // 1.26G elements: no room for the loop
  StridedCopy part;  // a slab at a far offset of a large tensor: the walk's end passes 2^31
  part.rank = 2;
  part.dims[0] = 1000, part.dims[1] = 1000;
  part.src_strides[0] = 1000, part.src_strides[1] = 1;
  part.dst_strides[0] = 1000, part.dst_strides[1] = 1;
  EXPECT_TRUE(fits_32bit_index(part));
  part.src_offset = (int64_t{1} << 31) - 1000;
  EXPECT_FALSE(fits_32bit_index(part));
  part.src_offset = 0, part.dst_strides[0] = int64_t{1} << 22;  // a destination row stride that walks past it
  EXPECT_FALSE(fits_32bit_index(part));
  // The limits themselves: fewer than 2^30 elements, and the highest index at most 2^31 - 1.
  StridedCopy line;
  line.rank = 1, line.src_strides[0] = line.dst_strides[0] = 1;
  line.dims[0] = (int64_t{1} << 30) - 1;
  EXPECT_TRUE(fits_32bit_index(line));
  line.dims[0] = int64_t{1} << 30;
  EXPECT_FALSE(fits_32bit_index(line));
  line.dims[0] = 1000, line.src_offset = (int64_t{1} << 31) - 1000;  // last index 2^31 - 1
  EXPECT_TRUE(fits_32bit_index(line));
  line.src_offset += 1;  // last index 2^31
  EXPECT_FALSE(fits_32bit_index(line));
  line.src_offset = 0, line.dst_offset = (int64_t{1} << 31) - 999;
  EXPECT_FALSE(fits_32bit_index(line));
  StridedCopy rev;  // a reversed walk from its last element down to 0
  rev.rank = 1, rev.dims[0] = 100, rev.src_strides[0] = -1, rev.src_offset = 99, rev.dst_strides[0] = 1;
  EXPECT_TRUE(fits_32bit_index(rev));
  ResizeParams r;
  r.rank = 4;
  const int64_t in[4] = {64, 40, 40, 64}, out[4] = {64, 80, 80, 64};
  for (int i = 0; i < 4; ++i) r.in_dims[i] = in[i], r.out_dims[i] = out[i];
  EXPECT_TRUE(fits_32bit_index(r));  // YOLOv8n's upsampling at batch 64 (26M outputs)
  r.out_dims[0] = r.in_dims[0] = 4096;
  EXPECT_FALSE(fits_32bit_index(r));
}

TEST(StridedCopyShape, ResizeWidensChannelsLastOnly) {
  ResizeParams p;
  p.rank = 4;
  const int64_t in[4] = {1, 20, 20, 64}, out[4] = {1, 40, 40, 64};
  for (int i = 0; i < 4; ++i) p.in_dims[i] = in[i], p.out_dims[i] = out[i];
  auto w = widen_resize(p, 2, 16, 0, 0);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->in_dims[3], 8);
  EXPECT_EQ(w->out_dims[3], 8);
  EXPECT_EQ(w->out_dims[1], 40);
  // The same resize walked element by element and unit by unit gives the same bytes.
  auto run = [](const ResizeParams& r, size_t unit, const std::vector<uint8_t>& x) {
    int64_t total = 1, in_total = 1;
    for (int d = 0; d < r.rank; ++d) total *= r.out_dims[d], in_total *= r.in_dims[d];
    std::vector<uint8_t> y(static_cast<size_t>(total) * unit);
    for (int64_t i = 0; i < total; ++i) {
      int64_t rest = i, src = 0, stride = 1;
      for (int d = r.rank - 1; d >= 0; --d) {
        const int64_t o = rest % r.out_dims[d];
        rest /= r.out_dims[d];
        src += (o * r.in_dims[d] / r.out_dims[d]) * stride;
        stride *= r.in_dims[d];
      }
      std::memcpy(&y[static_cast<size_t>(i) * unit], &x[static_cast<size_t>(src) * unit], unit);
    }
    return y;
  };
  std::vector<uint8_t> x(1 * 20 * 20 * 64 * 2);
  std::iota(x.begin(), x.end(), uint8_t{3});
  EXPECT_EQ(run(*w, 16, x), run(p, 2, x));
  p.out_dims[3] = 128;  // the channels resized too: no
  EXPECT_FALSE(widen_resize(p, 2, 16, 0, 0));
  p.out_dims[3] = 64;
  p.in_dims[3] = p.out_dims[3] = 12;  // 12 halves: 8-byte units only
  EXPECT_FALSE(widen_resize(p, 2, 16, 0, 0));
  EXPECT_TRUE(widen_resize(p, 2, 8, 0, 0));
}

}  // namespace
}  // namespace sd::native::cuda

#else
TEST(StridedCopyShape, NeedsTheCudaBuild) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif

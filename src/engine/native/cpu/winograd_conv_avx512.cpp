// WinogradConv's kernel for AVX-512 (compiled with -march=x86-64-v4; winograd_conv.h): the AVX2
// kernel's steps with 16 channels a register. Per block of six tiles, the input transform into
// V[36][6][c], 36 GEMMs V[p] x U[p] into M[36][6][oc] with a 6x64 FMA micro-kernel (24
// accumulators and 4 weight vectors of the 32 registers; 4 weight loads and 6 broadcasts per 24
// FMAs), then the output transform with the epilogue.
// Needs channels and output channels multiples of 16 (the constructor falls back to AVX2 else).
#define STREAMDET_ISA_VARIANT avx512
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::wino {
namespace {

// This file's vectors for the shared transforms (winograd_transforms.inc).
struct Ops {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V x, V y) { return _mm512_add_ps(x, y); }
  static V sub(V x, V y) { return _mm512_sub_ps(x, y); }
  static V fmadd(V x, V y, V z) { return _mm512_fmadd_ps(x, y, z); }
  static V fnmadd(V x, V y, V z) { return _mm512_fnmadd_ps(x, y, z); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V x) { _mm512_storeu_ps(p, x); }
};

#include "engine/native/cpu/winograd_transforms.inc"

using V16 = V;

// c[6][16 * NV] = a[6][k] x b[k][16 * NV]: a's rows lda apart, b packed [k][16 * NV], c's rows
// ldc apart. NV = 4 is the main kernel; 1 to 3 take a layer's last, narrower panel.
template <int NV>
inline void micro_kernel(const float* a, int64_t lda, const float* b, int64_t k, float* c, int64_t ldc) {
  constexpr int kNr = 16 * NV;
  V16 acc[6][NV];
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_setzero_ps();
  const float* a0 = a;
  const float* a1 = a + lda;
  const float* a2 = a + 2 * lda;
  const float* a3 = a + 3 * lda;
  const float* a4 = a + 4 * lda;
  const float* a5 = a + 5 * lda;
  for (int64_t i = 0; i < k; ++i) {
    V16 bv[NV];
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) bv[q] = _mm512_loadu_ps(b + i * kNr + q * 16);
    const float* rows[6] = {a0 + i, a1 + i, a2 + i, a3 + i, a4 + i, a5 + i};
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      const V16 av = _mm512_set1_ps(*rows[r]);
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) _mm512_storeu_ps(c + r * ldc + q * 16, acc[r][q]);
}

// M[p] = V[p] x U[p] for the 36 positions; U's panels as panel_width says (64 wide, the last
// one 16 to 48; 80 channels as 48 + 32).
void multiply(const RunArgs& a, const Tiling& d, int64_t tpad, const float* v, float* m) {
  const int64_t C = d.c, OC = d.oc;
  for (int p = 0; p < 36; ++p) {
    const float* vp = v + p * tpad * C;
    float* mp = m + p * tpad * OC;
    const float* up = a.packed + p * C * OC;
    for (int64_t o0 = 0, nr = 0; o0 < OC; o0 += nr) {
      nr = panel_width(true, OC, o0);
      const float* panel = up + o0 * C;
      for (int64_t t = 0; t < tpad; t += 6) {
        const float* at = vp + t * C;
        float* ct = mp + t * OC + o0;
        switch (nr) {
          case 64: micro_kernel<4>(at, C, panel, C, ct, OC); break;
          case 48: micro_kernel<3>(at, C, panel, C, ct, OC); break;
          case 32: micro_kernel<2>(at, C, panel, C, ct, OC); break;
          default: micro_kernel<1>(at, C, panel, C, ct, OC); break;
        }
      }
    }
  }
}

// Bias and the post ops on 16 output channels; `at` is the element offset in dst (and sum).
inline V16 epilogue(const RunArgs& a, V16 x, int64_t at) {
  for (int64_t i = 0; i < a.post_count; ++i) {
    const WinoPost& p = a.posts[i];
    switch (p.kind) {
      case WinoPostKind::kRelu: x = _mm512_max_ps(x, _mm512_setzero_ps()); break;
      case WinoPostKind::kLeakyRelu:
        x = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, _mm512_set1_ps(p.alpha));
        break;
      // The AVX-512 activation kernels' table-based exp (sigmoid_avx512.h): a degree-2
      // polynomial and a 16-entry table in a register instead of fast_exp_of's degree-6.
      case WinoPostKind::kSilu: x = avx512_math::silu(x); break;
      case WinoPostKind::kSigmoid: x = avx512_math::sigmoid(x); break;
      case WinoPostKind::kHardSwish: {
        const V16 g = _mm512_fmadd_ps(x, _mm512_set1_ps(1.f / 6.f), _mm512_set1_ps(0.5f));
        x = _mm512_mul_ps(x, _mm512_min_ps(_mm512_max_ps(g, _mm512_setzero_ps()), _mm512_set1_ps(1.f)));
        break;
      }
      case WinoPostKind::kClip: x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(p.alpha)), _mm512_set1_ps(p.beta)); break;
      case WinoPostKind::kSum: x = _mm512_add_ps(x, _mm512_loadu_ps(a.sum + at)); break;
    }
  }
  return x;
}

// M[36][tpad][oc] of tiles [t0, t0 + count) back to 4x4 outputs, with bias and epilogue, into dst.
void output_transform(const RunArgs& a, const Tiling& d, int64_t t0, int64_t count, int64_t tpad, const float* m) {
  const int64_t OC = d.oc;
  // SiLU alone, YOLOv8's every 3x3, without epilogue()'s loop and switch per vector.
  const bool silu_only = a.post_count == 1 && a.posts[0].kind == WinoPostKind::kSilu;
  for (int64_t tl = 0; tl < count; ++tl) {
    const int64_t t = t0 + tl, img = t / (d.th * d.tw), r = t % (d.th * d.tw), oy0 = r / d.tw * 4, ox0 = r % d.tw * 4;
    const int64_t rows = std::min<int64_t>(4, d.h - oy0), cols = std::min<int64_t>(4, d.w - ox0);
    const float* mt = m + tl * OC;
    for (int64_t o = 0; o < OC; o += 16) {
      V16 tmp[4][6];
      for (int j = 0; j < 6; ++j) {
        V16 col[6], o4[4];
        for (int i = 0; i < 6; ++i) col[i] = _mm512_loadu_ps(mt + (i * 6 + j) * tpad * OC + o);
        output_rows(col, o4);
        for (int i = 0; i < 4; ++i) tmp[i][j] = o4[i];
      }
      const V16 bias = _mm512_loadu_ps(a.bias + o);
      for (int64_t i = 0; i < rows; ++i) {
        V16 o4[4];
        output_rows(tmp[i], o4);
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t at = ((img * d.h + oy0 + i) * d.w + ox0 + j) * OC + o;
          const V16 x = _mm512_add_ps(o4[j], bias);
          _mm512_storeu_ps(a.dst + at, silu_only ? avx512_math::silu(x) : epilogue(a, x, at));
        }
      }
    }
  }
}

}  // namespace

void run_avx512(const RunArgs& a) {
  const WinogradGeometry& g = a.g;
  Tiling d{g.n, g.h, g.w, g.c, g.oc, (g.h + 3) / 4, (g.w + 3) / 4, 0};
  d.tiles = g.n * d.th * d.tw;
  // No more tiles per block than an even share of the threads needs (small layers).
  const int64_t share = (d.tiles + a.threads - 1) / a.threads;
  const int64_t tpad = std::min(a.block_tiles, (share + 5) / 6 * 6);
  const int64_t blocks = (d.tiles + tpad - 1) / tpad;
  parallel_for(blocks, a.threads, 1, [&](int64_t b0, int64_t b1) {
    float* v = thread_buffer(static_cast<size_t>(36 * tpad * (g.c + g.oc)));
    float* m = v + 36 * tpad * g.c;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t t0 = b * tpad, count = std::min(tpad, d.tiles - t0);
      input_transform(a, d, t0, count, tpad, v);
      multiply(a, d, tpad, v, m);
      output_transform(a, d, t0, count, tpad, m);
    }
  });
}

}  // namespace sd::native::ops::wino

// PointwiseConv's weight packing (once, at load) and the call into its AVX-512 or AVX2 kernel.
#include "engine/native/cpu/pointwise_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/native/cpu/bf16_convert.h"

namespace sd::native::ops {

bool PointwiseConv::applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t group, int64_t pt,
                            int64_t pl, int64_t pb, int64_t pr, cpu::Isa isa) {
#if defined(__x86_64__)
  return isa >= cpu::Isa::kAvx2 && kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && group == 1 && pt == 0 && pl == 0 &&
         pb == 0 && pr == 0 && c >= 1 && oc >= 8 && oc % 8 == 0;
#else
  (void)c, (void)oc, (void)kh, (void)kw, (void)stride_h, (void)stride_w, (void)group, (void)pt, (void)pl, (void)pb, (void)pr, (void)isa;
  return false;
#endif
}

PointwiseConv::PointwiseConv(const PointwiseGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts,
                             cpu::Isa isa, bool bf16)
    : g_(g),
      avx512_(isa >= cpu::Isa::kAvx512 && g.oc % 16 == 0),
      bf16_(avx512_ && bf16 && isa >= cpu::Isa::kAvx512Bf16 && g.c % 2 == 0),
      posts_(std::move(posts)) {
  const int64_t C = g.c, OC = g.oc;
  if (bf16_)
    packed_bf16_.assign(static_cast<size_t>(C * OC), 0);
  else
    packed_.assign(static_cast<size_t>(C * OC), 0.f);
#if defined(__x86_64__)
  for (int64_t o0 = 0, nr = 0; o0 < OC; o0 += nr) {
    nr = wino::panel_width(avx512_, OC, o0);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t l = 0; l < nr; ++l) {
        const float w = weights[(o0 + l) * C + c];
        if (bf16_)  // channel pairs side by side, as vdpbf16ps takes them
          packed_bf16_[static_cast<size_t>(o0 * C + (c / 2 * nr + l) * 2 + c % 2)] = float_to_bf16_rne(w);
        else
          packed_[static_cast<size_t>(o0 * C + c * nr + l)] = w;
      }
  }
#endif
  bias_.assign(static_cast<size_t>(OC), 0.f);
  if (bias) std::copy(bias, bias + OC, bias_.begin());
}

#if defined(__x86_64__)
pointwise::RunArgs PointwiseConv::args(std::span<const SrcPart> parts, float* dst, const float* sum, int threads, WinoStrides strides) const {
  if (parts.empty() || parts.size() > static_cast<size_t>(pointwise::kMaxParts)) std::abort();  // the caller checked
  pointwise::RunArgs a{g_,
                       packed_.data(),
                       bias_.data(),
                       posts_.data(),
                       static_cast<int64_t>(posts_.size()),
                       dst,
                       sum,
                       std::max(1, threads),
                       strides.dst > 0 ? strides.dst : g_.oc,
                       strides.sum > 0 ? strides.sum : g_.oc};
  for (size_t k = 0; k < parts.size(); ++k) a.parts[k] = parts[k];
  a.part_count = static_cast<int>(parts.size());
  a.packed_bf16 = packed_bf16_.data();
  return a;
}
#endif

void PointwiseConv::run_bf16(const uint16_t* src, float* dst, uint16_t* dst_bf16, const float* sum, int threads, WinoStrides strides) const {
  SrcPart whole{nullptr, g_.c, strides.src > 0 ? strides.src : g_.c};
  whole.src_bf16 = src;
  run_bf16_parts(std::span<const SrcPart>(&whole, 1), dst, dst_bf16, sum, threads, strides);
}

void PointwiseConv::run_bf16_parts(std::span<const SrcPart> parts, float* dst, uint16_t* dst_bf16, const float* sum, int threads,
                                   WinoStrides strides) const {
#if defined(__x86_64__)
  if (!bf16_) std::abort();  // the caller checked
  pointwise::RunArgs a = args(parts, dst, sum, threads, strides);
  a.dst_bf16 = dst_bf16;
  pointwise::run_avx512bf16(a);
#else
  (void)parts, (void)dst, (void)dst_bf16, (void)sum, (void)threads, (void)strides;
  std::abort();  // applies() is false here: never constructed to run
#endif
}

void PointwiseConv::run(const float* src, float* dst, const float* sum, int threads, WinoStrides strides) const {
  const SrcPart whole{src, g_.c, strides.src > 0 ? strides.src : g_.c};
  run_parts(std::span<const SrcPart>(&whole, 1), dst, sum, threads, strides);
}

void PointwiseConv::run_parts(std::span<const SrcPart> parts, float* dst, const float* sum, int threads, WinoStrides strides) const {
#if defined(__x86_64__)
  if (bf16_) std::abort();  // the caller checked
  const pointwise::RunArgs a = args(parts, dst, sum, threads, strides);
  if (avx512_)
    pointwise::run_avx512(a);
  else
    pointwise::run_avx2(a);
#else
  (void)parts, (void)dst, (void)sum, (void)threads, (void)strides;
  std::abort();  // applies() is false here: never constructed to run
#endif
}

}  // namespace sd::native::ops

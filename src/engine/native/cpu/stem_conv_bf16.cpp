#include "engine/native/cpu/stem_conv_bf16.h"

#include <algorithm>
#include <cstdlib>

#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {

bool StemConvBf16::applies(const StemConvGeometry& g, bool src_nhwc, const std::vector<WinoPost>& posts, cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa < cpu::Isa::kAvx512Bf16 || src_nhwc) return false;
  if (g.kh != 3 || g.kw != 3 || g.sh != 2 || g.sw != 2 || g.pl != 1) return false;
  if (g.c < 1 || g.c > 4 || g.oc < 8 || g.ow < 1 || g.oh < 1) return false;
  // Output column ox reads input columns 2 ox - 1 .. 2 ox + 2 (the last with a zero weight): inside
  // the row with its zero padding (row_len) wherever the output is.
  return std::none_of(posts.begin(), posts.end(), [](const WinoPost& p) { return p.kind == WinoPostKind::kSum; });
#else
  (void)g, (void)src_nhwc, (void)posts, (void)isa;
  return false;
#endif
}

StemConvBf16::StemConvBf16(const StemConvGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts)
    : g_(g), posts_(std::move(posts)) {
  const int64_t blocks = (g.oc + 15) / 16, row_taps = g.c * 3;  // the last block zero-padded
  packed_.assign(static_cast<size_t>(blocks * row_taps * 64), 0);
  for (int64_t ob = 0; ob < blocks; ++ob)
    for (int64_t t = 0; t < row_taps; ++t) {  // t = input channel * 3 + kernel row
      uint16_t* v = packed_.data() + (ob * row_taps + t) * 64;
      for (int64_t l = 0; l < 16 && ob * 16 + l < g.oc; ++l) {
        const float* k = weights + ((ob * 16 + l) * row_taps + t) * 3;  // OIHW: the kernel row's 3 columns
        v[2 * l] = float_to_bf16_rne(k[0]);
        v[2 * l + 1] = float_to_bf16_rne(k[1]);
        v[32 + 2 * l] = float_to_bf16_rne(k[2]);  // its pair's high half stays zero
      }
    }
  bias_.assign(static_cast<size_t>(blocks * 16), 0.f);
  if (bias) std::copy(bias, bias + g.oc, bias_.begin());
  // A converted row: x = -1 (the left padding, zero), the w inputs, then zeros to input column
  // 2 ow (the last pair's high half), rounded up to whole 32-element stores.
  row_len_ = (std::max(g.w + 1, 2 * g.ow + 2) + 31) / 32 * 32;
}

void StemConvBf16::run(const float* src, float* dst, uint16_t* dst_bf16, int threads) const {
#if defined(__x86_64__)
  const stem_bf16::RowArgs args{g_, packed_.data(), bias_.data(), posts_.data(), static_cast<int64_t>(posts_.size()), src, dst, dst_bf16,
                                row_len_};
  parallel_for(g_.n * g_.oh, threads, 4, [&](int64_t r0, int64_t r1) {
    std::vector<uint16_t> rows(static_cast<size_t>(g_.c * 3 * row_len_));  // the thread's converted input rows
    for (int64_t r = r0; r < r1; ++r) stem_bf16::row_avx512bf16(args, r, rows.data());
  });
#else
  (void)src, (void)dst, (void)dst_bf16, (void)threads;
  std::abort();  // applies() is false here: never constructed to run
#endif
}

}  // namespace sd::native::ops

#include "engine/native/cpu/timed_choice.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <vector>

namespace sd::native::dnnl_ops {

size_t fastest_candidate(size_t count, const std::function<void(size_t)>& run, TimingRule rule) {
  if (count < 2) return 0;
  auto once = [&](size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    run(i);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (size_t i = 0; i < count; ++i) run(i);  // warm-up
  std::vector<double> best(count, 1e30);
  // With win_every_round: the candidates that beat the incumbent by the margin in every round so
  // far (the incumbent's own entry unused). Once none is left the incumbent stays, and the
  // remaining rounds are not run: where it wins (most nodes), one round is enough.
  std::vector<bool> in_the_running(count, true);
  size_t fastest = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<double> t(count);
    for (size_t i = 0; i < count; ++i) best[i] = std::min(best[i], t[i] = once(i));
    fastest = static_cast<size_t>(std::min_element(best.begin(), best.end()) - best.begin());
    if (rule.win_every_round) {
      bool any = false;
      for (size_t i = 1; i < count; ++i) any = (in_the_running[i] = in_the_running[i] && t[i] < rule.switch_below * t[0]) || any;
      if (!any) return 0;
      continue;
    }
    bool clear = true;
    for (size_t i = 0; i < count; ++i) clear = clear && (i == fastest || best[fastest] < rule.clear * best[i]);
    if (clear) break;
  }
  if (fastest == 0 || !(best[fastest] < rule.switch_below * best[0])) return 0;
  if (rule.win_every_round && !in_the_running[fastest]) {  // the fastest by best time lost a round: the fastest of those that did not
    fastest = 0;
    for (size_t i = 1; i < count; ++i)
      if (in_the_running[i] && (fastest == 0 || best[i] < best[fastest])) fastest = i;
  }
  if (best[fastest] < rule.implausible_below * best[0]) return 0;
  return fastest;
}

size_t remembered_choice(const std::string& key, const std::function<size_t()>& measure) {
  static std::mutex mutex;
  static std::map<std::string, size_t> answers;
  {
    const std::lock_guard lock(mutex);
    if (auto it = answers.find(key); it != answers.end()) return it->second;
  }
  const size_t best = measure();  // outside the lock: sessions planned on other threads go on
  const std::lock_guard lock(mutex);
  answers.emplace(key, best);
  return best;
}

HostTensor timing_bytes(size_t bytes, bool made_up_source) {
  HostTensor t(DType::kUInt8, Shape{static_cast<int64_t>(std::max<size_t>(bytes, 64))});
  if (made_up_source) {
    auto* x = static_cast<uint8_t*>(t.data());
    for (int64_t i = 0; i < t.numel(); ++i) x[i] = static_cast<uint8_t>((i * 37) % 251);
  }
  return t;
}

std::string geometry_key(const ops::ConvGeometry& g, int64_t threads) {
  std::string key;
  for (int64_t v : {g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, g.pb, g.pr, g.group})
    key += std::to_string(v) + ",";
  return key + std::to_string(threads);
}

}  // namespace sd::native::dnnl_ops

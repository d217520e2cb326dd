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
  std::vector<std::vector<double>> rounds;  // rounds[r][i]
  size_t fastest = 0;
  for (int round = 0; round < 3; ++round) {
    rounds.emplace_back(count);
    for (size_t i = 0; i < count; ++i) best[i] = std::min(best[i], rounds.back()[i] = once(i));
    fastest = static_cast<size_t>(std::min_element(best.begin(), best.end()) - best.begin());
    bool clear = !rule.win_every_round;
    for (size_t i = 0; i < count; ++i) clear = clear && (i == fastest || best[fastest] < rule.clear * best[i]);
    if (clear) break;
  }
  if (fastest == 0 || !(best[fastest] < rule.switch_below * best[0])) return 0;
  if (rule.win_every_round)
    for (const auto& r : rounds)
      if (!(r[fastest] < rule.switch_below * r[0])) return 0;
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

}  // namespace sd::native::dnnl_ops

#include "core/human_bytes.h"

#include <cstdio>

namespace sd {

std::string human_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 999.5 && unit < 6) {
    v /= 1000.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.3g %s", v, kUnits[unit]);
  return buf;
}

}  // namespace sd

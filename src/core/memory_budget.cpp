#include "core/memory_budget.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/human_bytes.h"

namespace sd {

uint64_t default_memory_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{16} << 30;
  return static_cast<uint64_t>(static_cast<double>(pages) * static_cast<double>(page) * 0.8);
}

std::optional<uint64_t> parse_memory_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  char* end = nullptr;
  const std::string number = text.substr(0, i);
  const double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(v) || v <= 0) return std::nullopt;
  std::string unit;
  for (char c : text.substr(i)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  const double bytes = v * scale;
  if (bytes < 1 || bytes > 1e18) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<std::string> over_budget(uint64_t need, uint64_t budget) {
  if (need <= budget) return std::nullopt;
  return "over the memory budget of " + human_bytes(budget) + " (--max-memory)";
}

}  // namespace sd

#include "core/uri_redaction.h"

#include <cctype>

namespace sd {

namespace {

bool is_scheme_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'; }

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Where the userinfo of the URI whose authority starts at `start` ends (its '@'), or npos.
size_t userinfo_end(std::string_view text, size_t start, std::string_view scheme) {
  if (iequals(scheme, "redis") || iequals(scheme, "rediss")) {
    const size_t at = text.rfind('@');  // as the Redis parser: to the last '@'
    return at != std::string_view::npos && at >= start ? at : std::string_view::npos;
  }
  size_t end = start;
  while (end < text.size() && !is_space(text[end]) && text[end] != '/' && text[end] != '?' && text[end] != '#') ++end;
  const size_t at = text.substr(start, end - start).rfind('@');
  return at == std::string_view::npos ? at : start + at;
}

}  // namespace

std::string without_password(std::string_view text) {
  std::string out;
  size_t copied = 0;
  for (size_t sep = text.find("://"); sep != std::string_view::npos; sep = text.find("://", sep + 3)) {
    size_t scheme_start = sep;
    while (scheme_start > copied && is_scheme_char(text[scheme_start - 1])) --scheme_start;
    if (scheme_start == sep) continue;
    const size_t start = sep + 3;
    const size_t at = userinfo_end(text, start, text.substr(scheme_start, sep - scheme_start));
    if (at == std::string_view::npos) continue;
    const size_t colon = text.substr(start, at - start).find(':');
    const size_t password = colon == std::string_view::npos ? start : start + colon + 1;
    out.append(text.substr(copied, password - copied));
    out += "***";
    copied = at;
    sep = at > 3 ? at - 3 : 0;  // the next URI starts after this one's '@'
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace sd

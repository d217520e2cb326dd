#include "sinks/output_paths.h"

#include <cctype>
#include <filesystem>

namespace sd {

namespace {
void replace_all(std::string& s, const std::string& what, const std::string& with) {
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size()))
    s.replace(pos, what.size(), with);
}

std::string source_name(const std::string& uri) {
  std::string stem = std::filesystem::path(uri).stem().string();
  std::string out;
  for (char c : stem.empty() ? uri : stem)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out.substr(0, 64);
}
}  // namespace

std::string output_path_for_source(const std::string& pattern, int index, const std::string& source_uri,
                                   int source_count) {
  std::string out = pattern;
  bool templated = out.find("{i}") != std::string::npos || out.find("{name}") != std::string::npos;
  replace_all(out, "{i}", std::to_string(index));
  replace_all(out, "{name}", source_name(source_uri));
  if (templated || source_count <= 1) return out;
  std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + "_" + std::to_string(index) + p.extension().string())).string();
}

}  // namespace sd

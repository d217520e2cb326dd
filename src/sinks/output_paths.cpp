#include "sinks/output_paths.h"

#include <cctype>
#include <filesystem>

#include "core/uri_redaction.h"

namespace sd {

namespace {
void replace_all(std::string& s, const std::string& what, const std::string& with) {
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size()))
    s.replace(pos, what.size(), with);
}

// From the URI as shown (without its password): a password never ends up in a file name.
std::string source_name(const std::string& given) {
  const std::string uri = without_password(given);
  std::string stem = std::filesystem::path(uri).stem().string();
  std::string out;
  for (char c : stem.empty() ? uri : stem)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out.substr(0, 64);
}
}  // namespace

std::string source_file_name(const std::string& source_uri) { return source_name(source_uri); }

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

namespace {

// The same file: equivalent when both exist (hard links, symlinks), else the same canonical path.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) ca = fs::absolute(a, ec).lexically_normal();
  fs::path cb = fs::weakly_canonical(b, ec);
  if (ec) cb = fs::absolute(b, ec).lexically_normal();
  return ca == cb;
}

std::string describe(const NamedFile& f) { return f.option + " " + f.path + (f.note.empty() ? "" : " (" + f.note + ")"); }

}  // namespace

Status refuse_overlapping_files(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (const NamedFile& in : inputs)
      if (same_file(outputs[o].path, in.path))
        return fail(ErrorCode::kOutput, describe(outputs[o]) + " is the input " + describe(in) + ": refusing to overwrite it");
    for (size_t k = 0; k < o; ++k)
      if (same_file(outputs[o].path, outputs[k].path))
        return fail(ErrorCode::kOutput, describe(outputs[o]) + " and " + describe(outputs[k]) + " are the same file");
  }
  return ok();
}

}  // namespace sd

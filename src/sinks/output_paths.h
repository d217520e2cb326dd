// Per-source output names: "{i}" becomes the source's index and "{name}" its file stem; with
// several sources and no placeholder, "_<i>" goes before the extension (out.mp4 -> out_1.mp4).
#pragma once

#include <string>
#include <vector>

#include "core/error.h"

namespace sd {

// What "{name}" becomes for a source: its file stem (or URI), reduced to letters, digits, - and _.
std::string source_file_name(const std::string& source_uri);

std::string output_path_for_source(const std::string& pattern, int index, const std::string& source_uri,
                                   int source_count);

// A file named on the command line: the option that named it ("-o", "--source") and the path, and
// what tells it apart in a message ("for --source b.mp4", "read from --source imgs/"), if anything.
struct NamedFile {
  std::string option;
  std::string path;
  std::string note;
};

// kOutput naming both when an output is also an input, or two outputs are the same file
// (compared as canonical paths, so ./a.mp4, a.mp4 and a link to it match), before anything runs.
Status refuse_overlapping_files(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

}  // namespace sd

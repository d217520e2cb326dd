// Per-source output names: "{i}" becomes the source's index and "{name}" its file stem; with
// several sources and no placeholder, "_<i>" goes before the extension (out.mp4 -> out_1.mp4).
#pragma once

#include <string>

namespace sd {

std::string output_path_for_source(const std::string& pattern, int index, const std::string& source_uri,
                                   int source_count);

}  // namespace sd

// The NVIDIA kernel driver's version from the first line of /proc/driver/nvidia/version, for the
// GPU check's check.json: the first word that is dotted numbers. The line reads "NVRM version:
// NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." for the open module
// (the first GPU run recorded "for", the word after "Kernel Module") and "... Kernel Module
// 550.54.15  Tue ..." for the proprietary one. The whole line where no word is a version.
#pragma once

#include <cctype>
#include <sstream>
#include <string>

namespace sd::gpu_check {

inline std::string driver_version_from(const std::string& line) {
  std::istringstream words(line);
  for (std::string w; words >> w;)
    if (std::isdigit(static_cast<unsigned char>(w[0])) && w.find('.') != std::string::npos &&
        w.find_first_not_of("0123456789.") == std::string::npos)
      return w;
  return line;
}

}  // namespace sd::gpu_check

// Where an output goes, decided once from what its path names, so that no output destroys what is
// not its own: a regular file (or a name not there yet) is replaced whole, by a temporary file
// renamed onto it; a symbolic link is followed and its target replaced (the link stays a link, as
// cp does); a character device (/dev/null, a terminal) or a FIFO is written into in place, never
// renamed over; `-` (for the outputs that take it) is standard output; anything else (a folder, a
// block device, a socket) is refused.
#pragma once

#include <string>

#include "core/error.h"

namespace sd {

enum class OutputPlacement {
  kReplace,  // a temporary file beside `path`, renamed onto it when complete
  kInPlace,  // `path` is a device or a FIFO: opened and written as it is
  kStdout,   // standard output (`-`)
};

struct OutputPlace {
  OutputPlacement placement = OutputPlacement::kReplace;
  std::string path;  // kReplace: the file to replace (a link's target); kInPlace: the device or FIFO
};

// `what` names the output in errors ("video", "profile"); `-` means standard output only when
// `stdout_allowed` (else it is a file named "-"). kOutput for a path that cannot be an output. The
// in-place and stdout placements are checked for write access only: a FIFO is opened when it is
// written (opening it blocks until a reader comes).
Result<OutputPlace> place_output(const std::string& target, const std::string& what, bool stdout_allowed);

// "standard output" for `-`, else the path: how messages name an output.
std::string output_display_name(const std::string& target);

}  // namespace sd

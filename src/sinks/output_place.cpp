#include "sinks/output_place.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sd {

std::string output_display_name(const std::string& target) { return target == "-" ? "standard output" : target; }

Result<OutputPlace> place_output(const std::string& target, const std::string& what, bool stdout_allowed) {
  namespace fs = std::filesystem;
  auto cannot = [&](const std::string& why) {
    return fail(ErrorCode::kOutput, "cannot write " + what + " to " + output_display_name(target) + ": " + why);
  };
  if (target == "-" && stdout_allowed) {
    const int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) return cannot("it is closed, or not open for writing");
    return OutputPlace{OutputPlacement::kStdout, target};
  }
  if (target.empty() || target.back() == '/' || fs::path(target).filename().empty()) return cannot("not a file name");
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    if (errno != ENOENT) return cannot(std::strerror(errno));
    // Not there yet, or a link to a name not there yet: the file is created where the link points.
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(target, ec);
    return OutputPlace{OutputPlacement::kReplace, ec ? target : resolved.string()};
  }
  if (S_ISREG(st.st_mode)) {
    // A link is followed: its target is replaced and the link stays a link.
    std::error_code ec;
    const bool link = fs::is_symlink(target, ec);
    const fs::path resolved = link ? fs::canonical(target, ec) : fs::path(target);
    if (ec) return cannot(ec.message());
    return OutputPlace{OutputPlacement::kReplace, resolved.string()};
  }
  if (S_ISDIR(st.st_mode)) return cannot("it is a folder");
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    if (::access(target.c_str(), W_OK) != 0) return cannot(std::strerror(errno));
    return OutputPlace{OutputPlacement::kInPlace, target};
  }
  return cannot(std::string(S_ISBLK(st.st_mode) ? "it is a block device" : "it is a socket or another special file") +
                ": streamdet writes into files, character devices and FIFOs only");
}

}  // namespace sd

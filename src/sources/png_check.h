// A PNG's structure checked before it is decoded: OpenCV's PNG decoder leaves libpng's default
// error handler in place, which prints its own "libpng error: Read Error" (or "IDAT: CRC error")
// on stderr beside our one line. A file that would make libpng fail that way is found here first.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sd {

bool has_png_signature(std::string_view bytes);

// For bytes that start with the PNG signature: what is wrong with their chunks (one ends past the
// end of the file, fails its CRC, or IEND never comes), or nullopt when each chunk is whole.
std::optional<std::string> png_damage(std::string_view bytes);

}  // namespace sd

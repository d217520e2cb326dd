// Byte counts for people: "97 GB", "1.28 GB", "1.2 kB", "512 B" (SI units, three significant
// digits), in error messages that name a size.
#pragma once

#include <cstdint>
#include <string>

namespace sd {

std::string human_bytes(uint64_t bytes);

}  // namespace sd

#include "sources/png_check.h"

#include <cctype>
#include <cstdint>

extern "C" {
#include <libavutil/crc.h>
}

namespace sd {

namespace {

constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);

uint32_t big_endian32(std::string_view b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 24 | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8 | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3]));
}

// PNG's CRC-32 (ISO 3309, the one zlib computes) over the chunk's type and data.
uint32_t png_crc(std::string_view type_and_data) {
  const AVCRC* table = av_crc_get_table(AV_CRC_32_IEEE_LE);
  return av_crc(table, 0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(type_and_data.data()), type_and_data.size()) ^ 0xFFFFFFFFu;
}

}  // namespace

bool has_png_signature(std::string_view bytes) { return bytes.substr(0, kSignature.size()) == kSignature; }

std::optional<std::string> png_damage(std::string_view bytes) {
  size_t at = kSignature.size();
  while (true) {
    if (bytes.size() - at < 12) return "the file ends before its IEND chunk (cut short)";
    const uint64_t length = big_endian32(bytes, at);
    std::string type(bytes.substr(at + 4, 4));
    for (char& c : type)
      if (!std::isalpha(static_cast<unsigned char>(c))) c = '?';  // shown in a message: printable
    if (length > bytes.size() - at - 12) return "chunk " + type + " runs past the end of the file (cut short)";
    const std::string_view type_and_data = bytes.substr(at + 4, 4 + length);
    if (png_crc(type_and_data) != big_endian32(bytes, at + 8 + length)) return "chunk " + type + " fails its CRC check";
    if (type == "IEND") return std::nullopt;
    at += 12 + length;
  }
}

}  // namespace sd

#include "trainscope/viewer/half_float.h"

#include <bit>
#include <cmath>
#include <limits>

namespace trainscope::viewer {

float HalfToFloat(uint16_t half) {
  const bool negative = (half & 0x8000u) != 0;
  const uint32_t exponent = (half >> 10) & 0x1Fu;
  const uint32_t mantissa = half & 0x3FFu;
  float value;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in a float.
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 0x1F) {
    value = mantissa == 0 ? std::numeric_limits<float>::infinity()
                          : std::numeric_limits<float>::quiet_NaN();
  } else {
    // Rebias the exponent (15 -> 127) and widen the mantissa (10 -> 23 bits).
    value = std::bit_cast<float>(((exponent + 112u) << 23) | (mantissa << 13));
  }
  return negative ? -value : value;
}

bool DecodeHalfs(std::string_view bytes, size_t count, std::vector<float>* out) {
  out->clear();
  if (bytes.size() != 2 * count) return false;
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    // Assembled byte by byte: little-endian on the wire whatever this host is.
    const uint16_t half = static_cast<uint16_t>(static_cast<uint8_t>(bytes[2 * i]) |
                                                (static_cast<uint8_t>(bytes[2 * i + 1]) << 8));
    out->push_back(HalfToFloat(half));
  }
  return true;
}

}  // namespace trainscope::viewer

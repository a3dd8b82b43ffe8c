#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace trainscope::collector {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

// Slicing-by-4 tables: table[k][b] is the CRC of byte b followed by k zero
// bytes, so four input bytes are folded per step without a bit loop.
constexpr std::array<std::array<uint32_t, 256>, 4> MakeTables() {
  std::array<std::array<uint32_t, 256>, 4> tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedPolynomial : 0u);
    tables[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 4; ++k) {
      const uint32_t previous = tables[k - 1][b];
      tables[k][b] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

constexpr auto kTables = MakeTables();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const uint8_t* p,
                                                       size_t size) {
  uint64_t state = ~crc;
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    state = _mm_crc32_u8(static_cast<uint32_t>(state), *p++);
    --size;
  }
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    state = _mm_crc32_u64(state, word);
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    state = _mm_crc32_u8(static_cast<uint32_t>(state), *p++);
    --size;
  }
  return ~static_cast<uint32_t>(state);
}
#endif

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t state = ~crc;
  while (size >= 4) {
    // Little-endian load: byte 0 is the lowest byte, as the reflected CRC expects.
    state ^= static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
             static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    state = kTables[3][state & 0xFFu] ^ kTables[2][(state >> 8) & 0xFFu] ^
            kTables[1][(state >> 16) & 0xFFu] ^ kTables[0][state >> 24];
    p += 4;
    size -= 4;
  }
  while (size > 0) {
    state = (state >> 8) ^ kTables[0][(state ^ *p++) & 0xFFu];
    --size;
  }
  return ~state;
}

bool Crc32cHardwareAvailable() {
#if defined(__x86_64__)
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
#else
  return false;
#endif
}

uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  return ExtendSse42(crc, static_cast<const uint8_t*>(data), size);
#else
  return Crc32cExtendPortable(crc, data, size);
#endif
}

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  return Crc32cHardwareAvailable() ? Crc32cExtendHardware(crc, data, size)
                                   : Crc32cExtendPortable(crc, data, size);
}

}  // namespace trainscope::collector

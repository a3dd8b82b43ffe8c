// CRC32C (Castagnoli, polynomial 0x1EDC6F41 reflected as 0x82F63B78): the
// checksum of every log frame. Uses the SSE4.2 crc32 instruction when the CPU
// has it (checked once at run time) and a table otherwise.
//
// Usage:
//   uint32_t crc = Crc32c(bytes);
//   crc = Crc32cExtend(crc, more.data(), more.size());  // == Crc32c(bytes + more)
//
// Threading: pure functions, safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_SRC_STORE_CRC32C_H_
#define TRAINSCOPE_COLLECTOR_SRC_STORE_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainscope::collector {

// Continues a finished CRC32C `crc` (0 for none) over `size` more bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

inline uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data.data(), data.size()); }

// The two implementations, exposed so tests can check one against the other.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size);
// Only valid when Crc32cHardwareAvailable() is true.
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size);
bool Crc32cHardwareAvailable();

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_STORE_CRC32C_H_

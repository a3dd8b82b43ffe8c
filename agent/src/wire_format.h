// Protobuf's wire format, the pieces the sender writes by hand: varints,
// zigzag, tags and length-delimited fields (as protobuf writes them, byte for
// byte: BatchEncoderTest.WireFormatIsProtobufsOwn).
//
// Usage:
//   char* p = wire::PutVarint(value, p);               // room for kMaxVarintBytes
//   wire::AppendLengthDelimited(2, text, &out);
//
// Why by hand: the sender encodes each event's columns as it adds it and
// frames batches itself, never building or sizing a protobuf message.
//
// Threading: pure functions.
#ifndef TRAINSCOPE_AGENT_SRC_WIRE_FORMAT_H_
#define TRAINSCOPE_AGENT_SRC_WIRE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::agent::wire {

inline constexpr int kVarint = 0;
inline constexpr int kLengthDelimited = 2;
inline constexpr size_t kMaxVarintBytes = 10;

// Writes `value` as a varint at `p`; returns the end.
inline char* PutVarint(uint64_t value, char* p) {
  // Most column values (names, kinds, details, durations, thread ids) take
  // one to three bytes: those without a loop.
  if (value < 0x80) [[likely]] {
    *p = static_cast<char>(value);
    return p + 1;
  }
  if (value < 0x4000) {
    p[0] = static_cast<char>(static_cast<uint8_t>(value) | 0x80);
    p[1] = static_cast<char>(value >> 7);
    return p + 2;
  }
  if (value < 0x200000) {  // thread ids, sequence numbers, microsecond durations
    p[0] = static_cast<char>(static_cast<uint8_t>(value) | 0x80);
    p[1] = static_cast<char>(static_cast<uint8_t>(value >> 7) | 0x80);
    p[2] = static_cast<char>(value >> 14);
    return p + 3;
  }
  while (value >= 0x80) {
    *p++ = static_cast<char>(static_cast<uint8_t>(value) | 0x80);
    value >>= 7;
  }
  *p++ = static_cast<char>(value);
  return p;
}

inline size_t VarintSize(uint64_t value) {
  size_t n = 1;
  for (; value >= 0x80; value >>= 7) ++n;
  return n;
}

inline void AppendVarint(uint64_t value, std::string* out) {
  char buffer[kMaxVarintBytes];
  out->append(buffer, static_cast<size_t>(PutVarint(value, buffer) - buffer));
}

inline void AppendTag(int field, int wire_type, std::string* out) {
  AppendVarint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type), out);
}

inline void AppendLengthDelimited(int field, std::string_view bytes, std::string* out) {
  AppendTag(field, kLengthDelimited, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

// Zigzag encodings of sint64 / sint32.
inline uint64_t ZigZag64(int64_t n) {
  return (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63);
}
inline uint64_t ZigZag32(int32_t n) {
  return static_cast<uint32_t>((static_cast<uint32_t>(n) << 1) ^ static_cast<uint32_t>(n >> 31));
}

}  // namespace trainscope::agent::wire

#endif  // TRAINSCOPE_AGENT_SRC_WIRE_FORMAT_H_

#include "segment_format.h"

#include <cstdio>

#include "crc32c.h"

namespace trainscope::collector {
namespace {

void PutU32(uint32_t value, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xFFu);
}

uint32_t GetU32(const char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return value;
}

constexpr std::string_view kNamePrefix = "segment-";
constexpr std::string_view kNameSuffix = ".tslog";
constexpr size_t kIndexDigits = 8;

}  // namespace

std::string EncodeSegmentHeader() {
  std::string header(kSegmentHeaderBytes, '\0');
  header.replace(0, kSegmentMagic.size(), kSegmentMagic);
  PutU32(kSegmentFormatVersion, header.data() + 8);
  PutU32(0, header.data() + 12);
  return header;
}

SegmentHeaderCheck CheckSegmentHeader(std::string_view bytes, uint32_t* version) {
  if (bytes.size() < kSegmentHeaderBytes) return SegmentHeaderCheck::kTooShort;
  if (bytes.substr(0, kSegmentMagic.size()) != kSegmentMagic) return SegmentHeaderCheck::kBadMagic;
  const uint32_t found = GetU32(bytes.data() + 8);
  if (version != nullptr) *version = found;
  return found == kSegmentFormatVersion ? SegmentHeaderCheck::kValid
                                        : SegmentHeaderCheck::kUnsupportedVersion;
}

void AppendFrame(std::string_view payload, std::string* out) {
  char header[kFrameHeaderBytes];
  PutU32(kFrameMagic, header);
  PutU32(static_cast<uint32_t>(payload.size()), header + 4);
  uint32_t crc = Crc32cExtend(0, header + 4, 4);
  crc = Crc32cExtend(crc, payload.data(), payload.size());
  PutU32(crc, header + 8);
  out->append(header, kFrameHeaderBytes);
  out->append(payload);
}

DecodedFrame DecodeFrame(std::string_view buffer) {
  DecodedFrame frame;
  // Check as much of the magic as there is, so a short garbage tail is
  // reported as corrupt rather than as an incomplete frame.
  char magic[4];
  PutU32(kFrameMagic, magic);
  const size_t magic_bytes = buffer.size() < 4 ? buffer.size() : 4;
  if (buffer.substr(0, magic_bytes) != std::string_view(magic, magic_bytes)) {
    frame.problem = "bad frame magic";
    return frame;
  }
  if (buffer.size() < 8) {
    frame.status = FrameStatus::kNeedsMore;
    frame.frame_bytes = kFrameHeaderBytes;
    frame.problem = "frame header cut short";
    return frame;
  }
  const uint32_t length = GetU32(buffer.data() + 4);
  if (length > kMaxRecordBytes) {
    frame.problem = "frame length over the maximum record size";
    return frame;
  }
  const size_t frame_bytes = kFrameHeaderBytes + length;
  if (buffer.size() < frame_bytes) {
    frame.status = FrameStatus::kNeedsMore;
    frame.frame_bytes = frame_bytes;
    frame.problem = "frame cut short";
    return frame;
  }
  const std::string_view payload = buffer.substr(kFrameHeaderBytes, length);
  uint32_t crc = Crc32cExtend(0, buffer.data() + 4, 4);
  crc = Crc32cExtend(crc, payload.data(), payload.size());
  if (crc != GetU32(buffer.data() + 8)) {
    frame.problem = "frame CRC32C mismatch";
    return frame;
  }
  frame.status = FrameStatus::kOk;
  frame.payload = payload;
  frame.frame_bytes = frame_bytes;
  return frame;
}

std::string SegmentFileName(uint64_t index) {
  char name[64];
  std::snprintf(name, sizeof(name), "segment-%08llu.tslog", static_cast<unsigned long long>(index));
  return name;
}

std::optional<uint64_t> ParseSegmentFileName(std::string_view name) {
  if (name.size() < kNamePrefix.size() + kIndexDigits + kNameSuffix.size()) return std::nullopt;
  if (name.substr(0, kNamePrefix.size()) != kNamePrefix) return std::nullopt;
  if (name.substr(name.size() - kNameSuffix.size()) != kNameSuffix) return std::nullopt;
  const std::string_view digits =
      name.substr(kNamePrefix.size(), name.size() - kNamePrefix.size() - kNameSuffix.size());
  // Exactly 8 digits, or more once an index passes 99999999 (printf widens).
  if (digits.size() < kIndexDigits || digits.size() > 19) return std::nullopt;
  uint64_t index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<uint64_t>(c - '0');
  }
  return index;
}

}  // namespace trainscope::collector

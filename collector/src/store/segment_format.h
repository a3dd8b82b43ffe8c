// The on-disk format of a job's durable log, in one place.
//
// A log is a directory holding segment files named segment-NNNNNNNN.tslog
// (NNNNNNNN: the segment's index, 8 decimal digits, zero-padded; appends go to
// the highest index). All integers are little-endian.
//
//   segment := header frame*
//   header  := "TSLOG\0v1" (8 bytes) | u32 format version (= 1) | u32 reserved (= 0)   16 bytes
//   frame   := u32 kFrameMagic | u32 payload length | u32 crc | payload
//     crc     = CRC32C over the 4 length bytes followed by the payload, so a
//               damaged length is caught as surely as a damaged payload;
//     payload = one serialized trainscope.v1.LogRecord, at most kMaxRecordBytes.
//
// The frame magic lets a reader resynchronise after damage: it scans forward
// for the magic and accepts a position only when the whole frame's CRC checks.
// A frame cut short at the end of the last segment is a torn write (a crash
// while appending), not damage.
//
// Threading: pure functions, safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_SRC_STORE_SEGMENT_FORMAT_H_
#define TRAINSCOPE_COLLECTOR_SRC_STORE_SEGMENT_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::collector {

inline constexpr std::string_view kSegmentMagic{"TSLOG\0v1", 8};
inline constexpr uint32_t kSegmentFormatVersion = 1;
inline constexpr size_t kSegmentHeaderBytes = 16;

// Arbitrary, but neither zero nor 0xFF.. (what unwritten or erased blocks read
// as) nor a likely protobuf prefix. On disk: C3 17 5A 9E.
inline constexpr uint32_t kFrameMagic = 0x9E5A17C3u;
inline constexpr size_t kFrameHeaderBytes = 12;
// Guards against garbage lengths: no record is larger (the wire limit is far lower).
inline constexpr uint32_t kMaxRecordBytes = 64u << 20;

// The segment header, kSegmentHeaderBytes long.
std::string EncodeSegmentHeader();

enum class SegmentHeaderCheck {
  kValid,
  kTooShort,            // fewer than kSegmentHeaderBytes bytes
  kBadMagic,            // not a segment header
  kUnsupportedVersion,  // a segment of another format version
};
SegmentHeaderCheck CheckSegmentHeader(std::string_view bytes, uint32_t* version);

// Appends the frame holding `payload` (at most kMaxRecordBytes) to `out`.
void AppendFrame(std::string_view payload, std::string* out);

enum class FrameStatus {
  kOk,         // a whole frame whose CRC checks
  kNeedsMore,  // consistent so far, but the buffer ends before the frame does
  kCorrupt,    // bad magic, impossible length or CRC mismatch
};

struct DecodedFrame {
  FrameStatus status = FrameStatus::kCorrupt;
  std::string_view payload;  // kOk only; points into the buffer
  size_t frame_bytes = 0;    // kOk: header + payload; kNeedsMore: the length it would need
  const char* problem = "";  // kCorrupt/kNeedsMore: what was wrong, for reports
};

// Decodes the frame at the start of `buffer`. Never reads past the buffer and
// never allocates: it is fed arbitrary bytes (see fuzz/segment_frame_fuzzer.cc).
DecodedFrame DecodeFrame(std::string_view buffer);

// "segment-00000042.tslog" for 42.
std::string SegmentFileName(uint64_t index);
// The index in a segment file name, or nullopt when `name` is not one.
std::optional<uint64_t> ParseSegmentFileName(std::string_view name);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_STORE_SEGMENT_FORMAT_H_

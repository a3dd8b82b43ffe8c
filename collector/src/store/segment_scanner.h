// Reads one segment's frames in order, skipping damage: the shared core of
// JobLog recovery and LogReader.
//
// Usage:
//   ASSIGN_OR_RETURN(SegmentScan scan, ScanSegmentFile(path, [&](const v1::LogRecord& r) {
//     ...; return true;  // false stops the scan
//   }));
//   scan.damage;      // corrupt stretches in the middle (a valid frame follows each)
//   scan.tail_bytes;  // unreadable bytes at the end: torn in the last segment
//
// Threading: pure functions (ScanSegmentFile reads the file), safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_SRC_STORE_SEGMENT_SCANNER_H_
#define TRAINSCOPE_COLLECTOR_SRC_STORE_SEGMENT_SCANNER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

using RecordCallback = std::function<bool(const trainscope::v1::LogRecord&)>;

struct SegmentScan {
  uint64_t file_bytes = 0;
  bool header_valid = false;
  uint64_t records = 0;    // valid records seen (delivered to the callback)
  uint64_t valid_end = 0;  // offset past the header or the last whole frame, damage included
  // Bytes from valid_end to the end with no valid frame in them: a torn write
  // when this is the last segment. Zero when the scan was stopped.
  uint64_t tail_bytes = 0;
  std::string tail_problem;
  std::vector<DamagedRange> damage;  // `segment` left empty by ScanSegmentBytes
  bool stopped = false;              // the callback returned false
};

// Scans a segment held in memory. `on_record` may be null (count only).
SegmentScan ScanSegmentBytes(std::string_view bytes, const RecordCallback& on_record);

// Reads `path` whole and scans it. Fails when the file cannot be read, or
// (FAILED_PRECONDITION) when its header names another format version.
absl::StatusOr<SegmentScan> ScanSegmentFile(const std::filesystem::path& path,
                                            const RecordCallback& on_record);

// The segment files in `dir`, sorted by index (other files are ignored).
// NOT_FOUND naming `dir` when it does not exist.
absl::StatusOr<std::vector<std::pair<uint64_t, std::filesystem::path>>> ListSegmentFiles(
    const std::filesystem::path& dir);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_STORE_SEGMENT_SCANNER_H_

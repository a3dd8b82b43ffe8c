// Reads a job's durable log in order, for replay, export and tests.
//
// Usage:
//   ASSIGN_OR_RETURN(LogReader reader, LogReader::Open(job_dir));
//   ReadStats stats;
//   RETURN_IF_ERROR(reader.ForEach([](const v1::LogRecord& r) { ...; return true; }, &stats));
//
// Damage in the middle of the log (a record whose CRC fails, garbage framing)
// is skipped: the reader resynchronises on the next frame that checks, counts
// the damage and goes on. Unreadable bytes at the end of the last segment are
// treated as the end (a collector may be appending) and counted as torn.
// Each segment is read into memory whole (at most segment_bytes plus one record).
//
// Threading: an instance belongs to one thread. Reading a log while a
// collector appends to it is safe: a partial tail record is treated as the end.
#ifndef TRAINSCOPE_COLLECTOR_STORE_LOG_READER_H_
#define TRAINSCOPE_COLLECTOR_STORE_LOG_READER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

struct ReadStats {
  uint64_t segments = 0;
  uint64_t records = 0;
  uint64_t corrupt_records = 0;
  uint64_t torn_tail_bytes = 0;
  std::vector<DamagedRange> damage;  // where the corrupt records are
};

class LogReader {
 public:
  // `dir` is a job's log directory (holding segment-*.tslog files). Fails with
  // NOT_FOUND when it is missing or holds no segment, naming the path.
  static absl::StatusOr<LogReader> Open(const std::filesystem::path& dir);

  // Calls `fn` for every valid record in log order until it returns false.
  // Fails when a segment cannot be read or has an unsupported format version.
  // `stats` may be null.
  absl::Status ForEach(const std::function<bool(const trainscope::v1::LogRecord&)>& fn,
                       ReadStats* stats) const;

  // Sorted by segment index.
  const std::vector<std::filesystem::path>& segments() const { return segments_; }

 private:
  explicit LogReader(std::vector<std::filesystem::path> segments)
      : segments_(std::move(segments)) {}
  std::vector<std::filesystem::path> segments_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_LOG_READER_H_

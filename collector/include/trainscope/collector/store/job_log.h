// A job's durable log: a directory of segment files of framed LogRecords.
//
// Usage (the job's pipeline thread):
//   RecoveryReport report;
//   ASSIGN_OR_RETURN(auto log, JobLog::Open({.dir = data_dir / "jobs" / job_id}, &report));
//   log->Append(record);          // buffered, not yet durable
//   log->Sync();                  // durable now: acknowledge what was appended
//   log->recovered();             // per-stream progress found on disk at Open
//
// Threading: not thread-safe; one owner thread (the job's pipeline) calls it.
#ifndef TRAINSCOPE_COLLECTOR_STORE_JOB_LOG_H_
#define TRAINSCOPE_COLLECTOR_STORE_JOB_LOG_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

// What Open found on disk and what it repaired.
struct RecoveryReport {
  uint64_t segments = 0;
  uint64_t records = 0;          // valid records read
  uint64_t corrupt_records = 0;  // skipped: bad CRC or bad framing, resynchronised after
  uint64_t torn_bytes_cut = 0;   // incomplete tail of the last segment, truncated
  std::vector<std::string> messages;  // one human-readable line per repair
};

// Identity of one agent stream within a job.
struct StreamKey {
  uint32_t rank = 0;
  uint64_t agent_instance_id = 0;
  auto operator<=>(const StreamKey&) const = default;
};

// What the log holds for one stream; rebuilt at Open, kept current by Append.
struct StreamProgress {
  trainscope::v1::Hello hello;  // from the last StreamOpened (token cleared)
  uint64_t last_sequence = 0;   // highest batch sequence in the log
  uint64_t batches = 0;
  uint64_t events = 0;
  uint64_t bytes = 0;
  trainscope::v1::DropCounters drops;  // latest reported by the agent
  bool goodbye = false;
};

// Everything a restarted collector needs to resume a job.
struct JobLogState {
  std::map<StreamKey, StreamProgress> streams;
  std::vector<trainscope::v1::CommandRecord> commands;
};

class JobLog {
 public:
  struct Options {
    std::filesystem::path dir;
    uint64_t segment_bytes = 64ull << 20;  // rotate past this size
    bool fsync = true;                     // fdatasync in Sync(); off only for benchmarks/tests
  };

  // Opens the log in options.dir, creating it if needed. Existing segments are
  // scanned: a torn tail of the last segment is cut, corrupt records are
  // skipped and reported. Fails only when the directory cannot be used.
  static absl::StatusOr<std::unique_ptr<JobLog>> Open(const Options& options,
                                                      RecoveryReport* report);
  virtual ~JobLog() = default;

  // Appends one record to the current segment's buffer and folds it into state().
  virtual absl::Status Append(const trainscope::v1::LogRecord& record) = 0;
  // Writes everything appended and, with fsync, makes it durable.
  virtual absl::Status Sync() = 0;

  virtual const JobLogState& state() const = 0;
  virtual uint64_t bytes_written() const = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_JOB_LOG_H_

// A job's durable log: a directory of segment files of framed LogRecords
// (format: collector/src/store/segment_format.h).
//
// Usage (the job's pipeline thread):
//   RecoveryReport report;
//   ASSIGN_OR_RETURN(auto log, JobLog::Open({.dir = data_dir / "jobs" / job_id}, &report));
//   log->state();                 // per-stream progress found on disk at Open
//   log->Append(record);          // buffered in memory, not yet durable
//   log->Sync();                  // durable now: acknowledge what was appended
//
// Failure contract: when Append or Sync returns an error, nothing appended
// since the last successful Sync may be acknowledged.
//  - RESOURCE_EXHAUSTED (the disk or the quota is full): the log cuts its
//    file back to what the last Sync made durable, rolls state() and
//    segments() back to match, and takes appends again: when space comes
//    back the job goes on without a restart. An Append that fails this way
//    (a rotation could not write) also makes the next Sync fail.
//  - any other write or sync error (EIO, EFBIG...): the kernel's view of the
//    file is unknown, and the log refuses all further calls with the same
//    error. Reopen it to recover from disk.
// Records appended after the last Sync are dropped when the log is destroyed.
//
// A directory is opened by one JobLog at a time (an flock on dir/LOCK); a
// second Open fails with FAILED_PRECONDITION.
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

// A stretch of a segment that holds no readable record.
struct DamagedRange {
  std::filesystem::path segment;
  uint64_t offset = 0;  // byte offset in the segment file
  uint64_t length = 0;
  std::string problem;  // e.g. "frame CRC32C mismatch"
};

// Data the log no longer holds, as far as known (the segment chain shows
// that a segment is missing; only the index knows how much it held).
struct LossTotals {
  uint64_t segments_missing = 0;
  uint64_t records = 0;
  uint64_t events = 0;
  uint64_t bytes = 0;
  std::map<uint32_t, uint64_t> events_by_rank;  // where the index knew the rank's count
};

// What Open found on disk and what it repaired.
struct RecoveryReport {
  uint64_t segments = 0;
  uint64_t records = 0;               // valid records read
  uint64_t corrupt_records = 0;       // skipped: bad CRC or bad framing, resynchronised after
  uint64_t torn_bytes_cut = 0;        // incomplete tail of the last segment, truncated
  std::vector<std::string> messages;  // one human-readable line per repair or finding
  std::vector<DamagedRange> damage;   // the corrupt records, left in place (readers skip them)
  // Segment files missing from the chain: an index below the last one
  // present has no file (file names).
  std::vector<std::string> missing_segments;
  // Filled by AuditRecovery (recovery_audit.h), which knows the index:
  LossTotals lost;       // found at this Open
  LossTotals lost_ever;  // with what earlier reopenings found
  bool index_rebuilt = false;
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
  uint64_t last_sequence = 0;   // highest batch sequence in the log, refused ones included
  uint64_t batches = 0;         // accepted batches; events and bytes count these only
  uint64_t events = 0;
  uint64_t bytes = 0;                  // serialized EventBatch bytes
  uint64_t batches_refused = 0;        // StreamBatch records with refused_reason set
  trainscope::v1::DropCounters drops;  // latest reported by the agent
  bool goodbye = false;
  std::string exit_error;  // the goodbye's error: an abnormal end, said
  // Its last StreamOpened has a StreamClosed other than the collector's own
  // at shutdown: with goodbye false, the rank vanished. A stream open at the
  // log's end, or cut by a stopping collector, may come back.
  bool closed = false;
};

// Everything a restarted collector needs to resume a job.
struct JobLogState {
  std::map<StreamKey, StreamProgress> streams;
  std::vector<trainscope::v1::CommandRecord> commands;
};

// Folds one record into `state` exactly as JobLog does (for replay tools).
// A StreamBatch/StreamClosed for a stream without StreamOpened creates its
// entry with an empty hello (rank and instance id filled in).
void FoldLogRecord(const trainscope::v1::LogRecord& record, JobLogState* state);

// One segment file of the log, for the index.
struct SegmentInfo {
  std::filesystem::path path;
  uint64_t records = 0;  // valid records, including ones appended but not yet synced
  uint64_t bytes = 0;    // file size on disk
  bool sealed = false;   // no more appends: a later segment exists
  uint64_t events = 0;   // events of the accepted batches among `records`
};

class JobLog {
 public:
  struct Options {
    std::filesystem::path dir;
    uint64_t segment_bytes = 64ull << 20;  // rotate past this size
    bool fsync = true;                     // fdatasync in Sync(); off only for benchmarks/tests
  };

  // Opens the log in options.dir, creating it (0750, files 0640) if needed.
  // Existing segments are scanned: a torn tail of the last segment is cut,
  // corrupt records are skipped and reported, and so are gaps in the segment
  // chain and emptied sealed segments (how much they held only the index
  // knows: see recovery_audit.h). Fails only when the directory cannot be used.
  // `report` may be null.
  static absl::StatusOr<std::unique_ptr<JobLog>> Open(const Options& options,
                                                      RecoveryReport* report);
  virtual ~JobLog() = default;

  // Appends one record to the current segment's buffer and folds it into
  // state(). INVALID_ARGUMENT (not sticky) for a record without a body or over
  // kMaxRecordBytes. Rotating to a new segment happens here, at a record
  // boundary, and writes (and with fsync, syncs) the finished segment.
  virtual absl::Status Append(const trainscope::v1::LogRecord& record) = 0;
  // Writes everything appended and, with fsync, makes it durable.
  virtual absl::Status Sync() = 0;

  // Covers every record appended, synced or not.
  virtual const JobLogState& state() const = 0;
  // Total size of the log's segment files on disk (headers and frames).
  virtual uint64_t bytes_written() const = 0;
  virtual std::vector<SegmentInfo> segments() const = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_JOB_LOG_H_

// The SQLite (WAL) index over all durable logs in a data directory: jobs,
// their streams (ranks and incarnations) and segments, per-device step metrics and alerts.
//
// Usage:
//   ASSIGN_OR_RETURN(auto index, LogIndex::Open(data_dir / "index.sqlite"));
//   index->UpsertJob(job_id, created_unix_ns, world_size);
//   index->UpsertStream(job_id, progress);
//   index->UpsertSegment(job_id, segment_path, records, bytes, sealed, events);
//   index->ListJobs();
//
// The index is derived data: every row can be rebuilt from the logs, so it
// runs with synchronous=NORMAL (a power loss may lose its last transactions,
// never corrupt it). The schema version is PRAGMA user_version.
//
// This class reads and writes the rows; the connection and the file's
// settings are IndexConnection's, the schema and its migrations
// index_schema.h's, the start-up check of a damaged file index_set_aside.h's.
//
// Threading: one connection per instance, not thread-safe; several instances
// (one per job pipeline) may share the file: SQLite serialises the writers
// (busy timeout 5 s).
#ifndef TRAINSCOPE_COLLECTOR_STORE_LOG_INDEX_H_
#define TRAINSCOPE_COLLECTOR_STORE_LOG_INDEX_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainscope/collector/store/index_schema.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

struct IndexedJob {
  std::string job_id;
  int64_t created_unix_ns = 0;
  uint32_t world_size = 0;
  uint64_t streams = 0;
  uint64_t events = 0;
};

struct IndexedStream {
  uint32_t rank = 0;
  uint64_t agent_instance_id = 0;
  uint32_t restart_count = 0;
  std::string host;
  uint32_t pid = 0;
  std::string device;
  std::string framework;
  uint64_t last_sequence = 0;
  uint64_t batches = 0;
  uint64_t events = 0;
  uint64_t bytes = 0;
  bool goodbye = false;
};

struct IndexedSegment {
  std::string path;
  uint64_t records = 0;
  uint64_t bytes = 0;
  bool sealed = false;
  uint64_t events = 0;
};

// Data a job's log no longer holds though the index knew it, as found when
// the log was reopened (recovery_audit.h). Kept so that the loss is still
// reported after the index rows it was measured against are corrected.
struct IndexedLoss {
  int64_t found_unix_ns = 0;
  std::string segment;  // file name; empty for a per-rank finding
  int64_t rank = -1;    // >= 0: this rank's events (per-rank view of the same loss)
  std::string problem;
  uint64_t records = 0;
  uint64_t events = 0;
  uint64_t bytes = 0;
};

// One device's metrics in one step (from the collector's step assembly).
struct IndexedDeviceStep {
  uint64_t step = 0;
  uint32_t rank = 0;
  uint32_t stage = 0;
  int64_t start_ns = 0;  // the job's reference clock
  int64_t step_time_ns = 0;
  int64_t data_wait_ns = 0;
  int64_t compute_ns = 0;
  int64_t wait_ns = 0;
  int64_t transfer_ns = 0;
  int64_t idle_ns = 0;
  uint64_t flops = 0;
  uint64_t peak_memory_bytes = 0;
  bool complete = true;
};

class LogIndex {
 public:
  // Current schema version (PRAGMA user_version). Opening a database written
  // by a newer version fails with FAILED_PRECONDITION.
  static constexpr int kSchemaVersion = kIndexSchemaVersion;

  // Creates the file (and its parent directory) if needed.
  static absl::StatusOr<std::unique_ptr<LogIndex>> Open(const std::filesystem::path& db_path);

  // For the collector's start: checks the index file (PRAGMA quick_check)
  // and, when it is damaged or not a database, moves it (and its -wal, -shm)
  // aside as db_path + ".damaged-<unix seconds>" so that Open starts a new
  // one, to be rebuilt from the logs. Returns a line saying what was done;
  // empty when the index is sound. A missing index says so too ("missing").
  static absl::StatusOr<std::string> CheckOrSetAside(const std::filesystem::path& db_path);
  virtual ~LogIndex() = default;

  // Inserts the job or updates it: the earliest non-zero created time wins; a
  // non-zero world_size replaces the stored one.
  virtual absl::Status UpsertJob(const std::string& job_id, int64_t created_unix_ns,
                                 uint32_t world_size) = 0;
  // Keyed by (job_id, progress.hello.rank, progress.hello.agent_instance_id).
  // Creates the job row if missing.
  virtual absl::Status UpsertStream(const std::string& job_id, const StreamProgress& progress) = 0;
  // Keyed by segment_path. Creates the job row if missing.
  virtual absl::Status UpsertSegment(const std::string& job_id, const std::string& segment_path,
                                     uint64_t records, uint64_t bytes, bool sealed,
                                     uint64_t events) = 0;
  virtual absl::Status DeleteSegment(const std::string& segment_path) = 0;
  virtual absl::Status InsertLoss(const std::string& job_id, const IndexedLoss& loss) = 0;
  // A job's losses in the order they were found.
  virtual absl::StatusOr<std::vector<IndexedLoss>> ListLosses(const std::string& job_id) = 0;
  // Removes every row of the job (jobs, streams, segments, steps, alerts, losses).
  virtual absl::Status DeleteJob(const std::string& job_id) = 0;
  // Keyed by (job_id, step, rank); one transaction for all of `steps`.
  virtual absl::Status UpsertDeviceSteps(const std::string& job_id,
                                         const std::vector<IndexedDeviceStep>& steps) = 0;
  // A job's device steps with first_step <= step <= last_step, by (step, rank).
  virtual absl::StatusOr<std::vector<IndexedDeviceStep>> ListDeviceSteps(const std::string& job_id,
                                                                         uint64_t first_step,
                                                                         uint64_t last_step) = 0;
  // Keyed by (job_id, alert_id, state): a raise and its clear are two rows.
  virtual absl::Status InsertAlert(const trainscope::v1::Alert& alert) = 0;
  // A job's alerts in the order they happened (a clear after its raise),
  // filtered by `query`; with query.limit, the newest.
  virtual absl::StatusOr<std::vector<trainscope::v1::Alert>> ListAlerts(
      const std::string& job_id, const trainscope::v1::AlertQuery& query) = 0;
  // All jobs ordered by job_id, with their stream count and events summed over streams.
  virtual absl::StatusOr<std::vector<IndexedJob>> ListJobs() = 0;
  // A job's streams ordered by (rank, agent_instance_id).
  virtual absl::StatusOr<std::vector<IndexedStream>> ListStreams(const std::string& job_id) = 0;
  // A job's segments ordered by path.
  virtual absl::StatusOr<std::vector<IndexedSegment>> ListSegments(const std::string& job_id) = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_LOG_INDEX_H_

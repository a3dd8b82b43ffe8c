// A job's durable state as its pipeline finds it when it starts: the job's
// log (opened, or recovered after a crash: a torn tail cut, a damaged
// segment skipped), the data directory's index (null when it cannot be
// opened: the job runs without it and says so once), what the log and the
// index disagree on (AuditRecovery: what a crash lost shows in the job's
// status, per rank) and the job's token. Opening it is all that touches the
// disk before the pipeline thread starts.
//
// Usage:
//   ASSIGN_OR_RETURN(JobStorage storage, OpenJobStorage(job_id, options, &report));
//   use storage.log, storage.index, storage.token, storage.recovery ...
//
// Threading: the functions are thread-compatible (distinct jobs may be
// opened at once; one job by one caller); the result is handed to the
// job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STORAGE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STORAGE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/pipeline/job_token.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

struct JobStorageOptions {
  std::filesystem::path data_dir;  // the job's log is <data_dir>/jobs/<job_id>
  uint64_t segment_bytes = 64ull << 20;
  bool fsync = true;
  bool use_index = true;  // open <data_dir>/index.sqlite
  // Says what the job runs without (the index, the audit); null: quiet.
  std::function<void(absl::string_view)> notice;
};

struct JobStorage {
  std::unique_ptr<JobLog> log;
  std::unique_ptr<LogIndex> index;  // null: running without the index
  JobToken token;
  // What reopening the log found, when worth showing (JobStatus.recovery),
  // and the events lost per rank since the job began.
  std::optional<trainscope::v1::LogRecovery> recovery;
  std::map<uint32_t, uint64_t> events_lost_by_rank;
};

// Opens (or recovers) the job's log and audits it against the index.
// `report` may be null; the caller's index_rebuilt and messages in it are
// kept. Errors name the job and its directory.
absl::StatusOr<JobStorage> OpenJobStorage(const std::string& job_id,
                                          const JobStorageOptions& options, RecoveryReport* report);
// As OpenJobStorage, over a log the caller opened; `report` (may be null:
// no audit) says what opening the log found.
absl::StatusOr<JobStorage> JobStorageOverLog(const std::string& job_id,
                                             const JobStorageOptions& options,
                                             std::unique_ptr<JobLog> log, RecoveryReport* report);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STORAGE_H_

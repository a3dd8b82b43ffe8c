#include "trainscope/collector/pipeline/job_storage.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "trainscope/collector/ingest/hello_validator.h"
#include "trainscope/collector/store/recovery_audit.h"

namespace trainscope::collector {

absl::StatusOr<JobStorage> OpenJobStorage(const std::string& job_id,
                                          const JobStorageOptions& options,
                                          RecoveryReport* report) {
  // The job id names a directory: checked before it is used as one.
  if (absl::Status s = ValidateJobId(job_id, "job_id"); !s.ok()) return s;
  const std::filesystem::path job_dir = options.data_dir / "jobs" / job_id;
  JobLog::Options log_options;
  log_options.dir = job_dir;
  log_options.segment_bytes = options.segment_bytes;
  log_options.fsync = options.fsync;
  RecoveryReport local_report;
  if (report == nullptr) report = &local_report;
  const bool index_rebuilt = report->index_rebuilt;
  std::vector<std::string> caller_messages = std::move(report->messages);
  absl::StatusOr<std::unique_ptr<JobLog>> log = JobLog::Open(log_options, report);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("job ", job_id, ": cannot open its log in ", job_dir.string(),
                                     ": ", log.status().message()));
  }
  report->index_rebuilt = index_rebuilt;
  report->messages.insert(report->messages.begin(), caller_messages.begin(), caller_messages.end());
  return JobStorageOverLog(job_id, options, std::move(*log), report);
}

absl::StatusOr<JobStorage> JobStorageOverLog(const std::string& job_id,
                                             const JobStorageOptions& options,
                                             std::unique_ptr<JobLog> log, RecoveryReport* report) {
  if (absl::Status s = ValidateJobId(job_id, "job_id"); !s.ok()) return s;
  const std::filesystem::path job_dir = options.data_dir / "jobs" / job_id;
  JobStorage storage;
  storage.log = std::move(log);
  if (options.use_index) {
    absl::StatusOr<std::unique_ptr<LogIndex>> opened =
        LogIndex::Open(options.data_dir / "index.sqlite");
    if (opened.ok()) {
      storage.index = std::move(*opened);
    } else if (options.notice) {
      options.notice(absl::StrCat("trainscope-collector: job ", job_id,
                                  ": running without the index: ", opened.status().message()));
    }
  }
  if (report != nullptr && storage.index != nullptr) {
    // Before anything new is appended or indexed: the index still says what it knew.
    if (absl::Status audited =
            AuditRecovery(job_id, *storage.log, storage.index.get(), absl::Now(), report);
        !audited.ok() && options.notice) {
      options.notice(absl::StrCat("trainscope-collector: job ", job_id,
                                  ": cannot compare its log with the index: ", audited.message()));
    }
  }
  absl::StatusOr<JobToken> token = ReadJobToken(job_dir);
  if (!token.ok()) return token.status();
  storage.token = std::move(*token);
  if (report != nullptr && WorthShowing(*report)) {
    const LossTotals& lost =
        report->lost_ever.events_by_rank.empty() ? report->lost : report->lost_ever;
    storage.recovery = RecoveryToProto(*report, absl::Now());
    storage.events_lost_by_rank = lost.events_by_rank;
  }
  return storage;
}

}  // namespace trainscope::collector

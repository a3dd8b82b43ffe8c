// The jobs stored under a data directory (<data-dir>/jobs/<job>), their size
// and age, the retention rule that picks which to remove, and removal.
//
// Usage:
//   ASSIGN_OR_RETURN(std::vector<StoredJob> jobs, ListStoredJobs(data_dir));
//   for (const StoredJob& job : SelectForRetention(jobs, {.max_age = absl::Hours(24 * 30)},
//                                                  absl::Now(), is_live)) {
//     RETURN_IF_ERROR(DeleteStoredJob(data_dir, job.job_id));
//   }
//
// A job is removed whole: its directory (log segments, token) and its rows in
// index.sqlite. Removal takes the job's LOCK first, the lock a collector holds
// while the job is open (job_log.h), so a job a running collector has open is
// refused, never half-deleted under it; the directory is first moved out of
// jobs/ (to <data-dir>/.deleting/) so a crash mid-way cannot leave a
// half-job that a restarted collector would recover.
//
// Threading: plain functions over the filesystem, safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_STORE_STORED_JOBS_H_
#define TRAINSCOPE_COLLECTOR_STORE_STORED_JOBS_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace trainscope::collector {

struct StoredJob {
  std::string job_id;
  std::filesystem::path dir;
  uint64_t bytes = 0;                          // all its files
  absl::Time last_write = absl::InfinitePast();  // newest file modification
};

// What retention keeps. Zero means no limit.
struct RetentionPolicy {
  absl::Duration max_age = absl::ZeroDuration();  // since the job's last write
  uint64_t max_bytes = 0;                         // all jobs together
};

// Every job directory under data_dir/jobs (valid job ids only), by job id.
// An empty list when data_dir/jobs does not exist.
absl::StatusOr<std::vector<StoredJob>> ListStoredJobs(const std::filesystem::path& data_dir);

// One job as ListStoredJobs measures it; NOT_FOUND when it is not stored.
absl::StatusOr<StoredJob> StatStoredJob(const std::filesystem::path& data_dir,
                                        const std::string& job_id);

// The jobs retention removes: those last written more than max_age before
// `now`, then, oldest first, as many more as needed to bring the total under
// max_bytes. A job for which `is_live` says true is never picked (it still
// counts toward the total). Oldest first.
std::vector<StoredJob> SelectForRetention(const std::vector<StoredJob>& jobs,
                                          const RetentionPolicy& policy, absl::Time now,
                                          const std::function<bool(const std::string&)>& is_live);

// Removes job `job_id` from data_dir: NOT_FOUND when there is no such job,
// FAILED_PRECONDITION when a collector has it open (its LOCK is held), with
// a message that says what to do. Also removes leftovers of an interrupted
// removal under data_dir/.deleting.
absl::Status DeleteStoredJob(const std::filesystem::path& data_dir, const std::string& job_id);

// The reason SelectForRetention picked `job`, for log lines: "last written
// 31 days ago (over --retain-days=30)" or "the data directory holds 120.0 GiB
// (over --retain-gb=100)".
std::string RetentionReason(const StoredJob& job, const RetentionPolicy& policy, absl::Time now);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_STORED_JOBS_H_

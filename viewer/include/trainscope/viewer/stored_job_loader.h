// Opens a stored job log offline: runs it through the collector's analysis
// (AnalyzeStoredJob) and converts its steps, aligned operators, alerts and
// loss contribution (the difficult items and each one's map snapshots) into
// a JobData for the views.
//
// Usage:
//   absl::StatusOr<JobData> data = LoadStoredJob("/var/lib/trainscope", "job-1", {});
//
// Threading: blocking; call from any one thread.
#ifndef TRAINSCOPE_VIEWER_STORED_JOB_LOADER_H_
#define TRAINSCOPE_VIEWER_STORED_JOB_LOADER_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct StoredJobOptions {
  uint32_t max_steps = 0;  // 0: every step; else the newest ones
  uint32_t max_operators = 4'000'000;
};

absl::StatusOr<JobData> LoadStoredJob(const std::filesystem::path& data_dir,
                                      const std::string& job_id, const StoredJobOptions& options);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_STORED_JOB_LOADER_H_

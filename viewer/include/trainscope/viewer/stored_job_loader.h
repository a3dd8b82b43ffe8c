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
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct StoredJobOptions {
  uint32_t max_steps = 0;  // 0: every step; else the newest ones
  // Operators loaded at most: without `steps` the newest whole steps that
  // fit (the analysis evicts the oldest); JobData::coverage says what was cut.
  uint32_t max_operators = 4'000'000;
  // Only these steps (first, last; inclusive): their operators up to
  // max_operators. NOT_FOUND when the job has none of them.
  std::optional<std::pair<uint64_t, uint64_t>> steps;
};

absl::StatusOr<JobData> LoadStoredJob(const std::filesystem::path& data_dir,
                                      const std::string& job_id, const StoredJobOptions& options);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_STORED_JOB_LOADER_H_

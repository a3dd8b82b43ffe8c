// The SQLite (WAL) index over all durable logs in a data directory: jobs,
// their streams (ranks and incarnations) and segments. Later: steps, alerts.
//
// Usage:
//   ASSIGN_OR_RETURN(auto index, LogIndex::Open(data_dir / "index.sqlite"));
//   index->UpsertJob(job_id, created_unix_ns);
//   index->UpsertStream(job_id, hello, progress);
//   index->UpsertSegment(job_id, segment_path, records, bytes, sealed);
//   index->ListJobs();
//
// Threading: one connection per instance, not thread-safe; several instances
// (one per job pipeline) may share the file: SQLite serialises the writers.
#ifndef TRAINSCOPE_COLLECTOR_STORE_LOG_INDEX_H_
#define TRAINSCOPE_COLLECTOR_STORE_LOG_INDEX_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainscope/collector/store/job_log.h"

namespace trainscope::collector {

struct IndexedJob {
  std::string job_id;
  int64_t created_unix_ns = 0;
  uint32_t world_size = 0;
  uint64_t streams = 0;
  uint64_t events = 0;
};

class LogIndex {
 public:
  static absl::StatusOr<std::unique_ptr<LogIndex>> Open(const std::filesystem::path& db_path);
  virtual ~LogIndex() = default;

  virtual absl::Status UpsertJob(const std::string& job_id, int64_t created_unix_ns,
                                 uint32_t world_size) = 0;
  virtual absl::Status UpsertStream(const std::string& job_id, const StreamProgress& progress) = 0;
  virtual absl::Status UpsertSegment(const std::string& job_id, const std::string& segment_path,
                                     uint64_t records, uint64_t bytes, bool sealed) = 0;
  virtual absl::StatusOr<std::vector<IndexedJob>> ListJobs() = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_LOG_INDEX_H_

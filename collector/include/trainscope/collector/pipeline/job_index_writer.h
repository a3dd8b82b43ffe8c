// Keeps a job's rows in the collector's SQLite index current: the job, its
// streams, its log segments, its closed steps and its alerts.
//
// The index is for listings, not for durability: changes are marked as they
// happen and written off the hot path, at most once a second and a bounded
// number of streams per round, so that a burst of hellos never waits on
// SQLite. When a write fails the job goes on without the index (one notice),
// except on a full disk: then what was not written stays marked and is
// written at a later flush, once there is space.
//
// Usage (on the pipeline thread):
//   JobIndexWriter index(job_id, std::move(opened_index), log.get(), notice);
//   index.MarkStream(key); index.AddStep(step); index.AddAlert(alert);
//   index.Flush(now, /*force=*/false, created_unix_ns, world_size);
//   wake the thread by index.NextFlush()
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_INDEX_WRITER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_INDEX_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class JobIndexWriter {
 public:
  // `index` null: no index (every call is a no-op). `log` must outlive the
  // writer; streams and segments are read from it when flushed.
  JobIndexWriter(std::string job_id, std::unique_ptr<LogIndex> index, const JobLog* log,
                 std::function<void(absl::string_view)> notice);

  void MarkJob() { job_dirty_ = true; }
  void MarkSegments() { segments_dirty_ = true; }
  void MarkStream(const StreamKey& key);
  void AddStep(const trainscope::v1::StepReport& step);
  void AddAlert(const trainscope::v1::Alert& alert);

  bool active() const { return index_ != nullptr; }
  // When the next flush is due (InfiniteFuture: nothing to write).
  absl::Time NextFlush() const;
  // Writes what changed when due (or at once with `force`).
  void Flush(absl::Time now, bool force, int64_t created_unix_ns, uint32_t world_size);

 private:
  bool Dirty() const;
  // False when `status` is an error: the index dropped (with a notice), or
  // kept for a later try when the disk is full (RESOURCE_EXHAUSTED).
  bool Written(const absl::Status& status);

  const std::string job_id_;
  std::unique_ptr<LogIndex> index_;
  const JobLog* const log_;
  const std::function<void(absl::string_view)> notice_;
  bool job_dirty_ = false;
  bool segments_dirty_ = false;
  std::set<StreamKey> dirty_streams_;
  std::vector<IndexedDeviceStep> pending_steps_;
  std::vector<trainscope::v1::Alert> pending_alerts_;
  absl::Time next_flush_ = absl::InfinitePast();
  bool disk_full_ = false;  // the last write failed for space (said once)
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_INDEX_WRITER_H_

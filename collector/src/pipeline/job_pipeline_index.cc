// JobPipeline: the SQLite index (see job_pipeline.h).
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {

// The index is for listings, not for durability: updates are gathered and
// written off the hot path, a bounded number per round, so that a burst of
// hellos never waits on SQLite.
void JobPipeline::IndexJob() { index_job_dirty_ = true; }

void JobPipeline::IndexSegments() { index_segments_dirty_ = true; }

void JobPipeline::IndexStream(const StreamKey& key) { index_dirty_streams_.insert(key); }

bool JobPipeline::IndexDirty() const {
  return index_ && (index_job_dirty_ || index_segments_dirty_ || !index_dirty_streams_.empty() ||
                    !pending_index_steps_.empty() || !pending_index_alerts_.empty());
}

void JobPipeline::FlushIndex(absl::Time now, bool force) {
  if (!IndexDirty() || (!force && now < next_index_flush_)) return;
  next_index_flush_ = now + absl::Seconds(1);
  auto failed = [this](const absl::Status& s) {
    if (s.ok()) return false;
    Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                        ": index update failed, running without the index: ", s.message()));
    index_.reset();
    return true;
  };
  if (index_job_dirty_) {
    index_job_dirty_ = false;
    if (failed(index_->UpsertJob(job_id_, created_unix_ns_, world_size_))) return;
  }
  constexpr int kStreamsPerRound = 64;
  int written = 0;
  while (!index_dirty_streams_.empty() && (force || written < kStreamsPerRound)) {
    const StreamKey key = *index_dirty_streams_.begin();
    index_dirty_streams_.erase(index_dirty_streams_.begin());
    auto it = log_->state().streams.find(key);
    if (it == log_->state().streams.end()) continue;
    ++written;
    if (failed(index_->UpsertStream(job_id_, it->second))) return;
  }
  if (!pending_index_steps_.empty()) {
    std::vector<IndexedDeviceStep> rows;
    for (const v1::StepReport& step : pending_index_steps_) {
      for (const v1::DeviceStep& d : step.devices()) {
        rows.push_back({.step = d.step(),
                        .rank = d.rank(),
                        .stage = d.stage(),
                        .start_ns = d.start_ns(),
                        .step_time_ns = d.step_time_ns(),
                        .data_wait_ns = d.data_wait_ns(),
                        .compute_ns = d.compute_ns(),
                        .wait_ns = d.wait_ns(),
                        .transfer_ns = d.transfer_ns(),
                        .idle_ns = d.idle_ns(),
                        .flops = d.flops(),
                        .peak_memory_bytes = d.peak_memory_bytes(),
                        .complete = d.complete()});
      }
    }
    pending_index_steps_.clear();
    if (failed(index_->UpsertDeviceSteps(job_id_, rows))) return;
  }
  for (const v1::Alert& alert : pending_index_alerts_) {
    if (failed(index_->InsertAlert(alert))) return;
  }
  pending_index_alerts_.clear();
  if (index_segments_dirty_) {
    index_segments_dirty_ = false;
    for (const SegmentInfo& segment : log_->segments()) {
      if (failed(index_->UpsertSegment(job_id_, segment.path.string(), segment.records,
                                       segment.bytes, segment.sealed))) {
        return;
      }
    }
  }
}

}  // namespace trainscope::collector

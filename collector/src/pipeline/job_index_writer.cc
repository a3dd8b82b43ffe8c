#include "trainscope/collector/pipeline/job_index_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::collector {

JobIndexWriter::JobIndexWriter(std::string job_id, std::unique_ptr<LogIndex> index,
                               const JobLog* log, std::function<void(absl::string_view)> notice)
    : job_id_(std::move(job_id)),
      index_(std::move(index)),
      log_(log),
      notice_(std::move(notice)) {}

void JobIndexWriter::MarkStream(const StreamKey& key) {
  if (index_) dirty_streams_.insert(key);
}

void JobIndexWriter::AddStep(const v1::StepReport& step) {
  if (!index_) return;
  for (const v1::DeviceStep& d : step.devices()) {
    pending_steps_.push_back({.step = d.step(),
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

void JobIndexWriter::AddAlert(const v1::Alert& alert) {
  if (index_) pending_alerts_.push_back(alert);
}

bool JobIndexWriter::Dirty() const {
  return index_ && (job_dirty_ || segments_dirty_ || !dirty_streams_.empty() ||
                    !pending_steps_.empty() || !pending_alerts_.empty());
}

absl::Time JobIndexWriter::NextFlush() const {
  return Dirty() ? next_flush_ : absl::InfiniteFuture();
}

bool JobIndexWriter::Written(const absl::Status& status) {
  if (status.ok()) {
    disk_full_ = false;
    return true;
  }
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    // The disk is full: keep the index and what was not written, try again
    // at the next flush (said once per spell).
    if (!disk_full_ && notice_) {
      notice_(absl::StrCat("trainscope-collector: job ", job_id_,
                           ": index update deferred until there is space: ", status.message()));
    }
    disk_full_ = true;
    return false;
  }
  if (notice_) {
    notice_(absl::StrCat("trainscope-collector: job ", job_id_,
                         ": index update failed, running without the index: ", status.message()));
  }
  index_.reset();
  return false;
}

void JobIndexWriter::Flush(absl::Time now, bool force, int64_t created_unix_ns,
                           uint32_t world_size) {
  if (!Dirty() || (!force && now < next_flush_)) return;
  next_flush_ = now + absl::Seconds(1);
  // Each step leaves what it could not write marked, for the next flush.
  if (job_dirty_) {
    if (!Written(index_->UpsertJob(job_id_, created_unix_ns, world_size))) return;
    job_dirty_ = false;
  }
  constexpr int kStreamsPerRound = 64;
  int written = 0;
  while (!dirty_streams_.empty() && (force || written < kStreamsPerRound)) {
    const StreamKey key = *dirty_streams_.begin();
    auto it = log_->state().streams.find(key);
    if (it != log_->state().streams.end()) {
      ++written;
      if (!Written(index_->UpsertStream(job_id_, it->second))) return;
    }
    dirty_streams_.erase(key);
  }
  if (!pending_steps_.empty()) {
    if (!Written(index_->UpsertDeviceSteps(job_id_, pending_steps_))) return;
    pending_steps_.clear();
  }
  while (!pending_alerts_.empty()) {
    if (!Written(index_->InsertAlert(pending_alerts_.front()))) return;
    pending_alerts_.erase(pending_alerts_.begin());
  }
  if (segments_dirty_) {
    for (const SegmentInfo& segment : log_->segments()) {
      if (!Written(index_->UpsertSegment(job_id_, segment.path.string(), segment.records,
                                         segment.bytes, segment.sealed, segment.events))) {
        return;
      }
    }
    segments_dirty_ = false;
  }
}

}  // namespace trainscope::collector

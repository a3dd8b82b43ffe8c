#include "trainscope/client/feed_follower.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace trainscope::client {
namespace {

FeedFollower::Event Notice(std::string text) {
  FeedFollower::Event event;
  event.type = FeedFollower::Event::kNotice;
  event.text = std::move(text);
  return event;
}

}  // namespace

FeedFollower::FeedFollower(FeedSource* source, std::string job_id, absl::Duration snapshot_timeout)
    : source_(source), job_id_(std::move(job_id)), snapshot_timeout_(snapshot_timeout) {}

absl::Status FeedFollower::Start(std::vector<Event>* events) {
  // Subscribing first means no update published after the snapshot is missed
  // (the ones before it are dropped as already folded in).
  if (absl::Status status = source_->Subscribe(absl::StrCat(job_id_, "/")); !status.ok()) {
    return status;
  }
  absl::StatusOr<trainscope::v1::FeedSnapshot> snapshot =
      source_->RequestSnapshot(job_id_, snapshot_timeout_);
  if (!snapshot.ok()) return snapshot.status();
  if (ApplySnapshot(*snapshot, events)) return absl::OkStatus();
  events->push_back(Notice(
      absl::StrCat("job ", job_id_, " is not known to the collector yet",
                   snapshot->error().empty() ? "" : absl::StrCat(" (", snapshot->error(), ")"),
                   "; waiting for its updates")));
  return absl::OkStatus();
}

bool FeedFollower::ApplySnapshot(const trainscope::v1::FeedSnapshot& snapshot,
                                 std::vector<Event>* events) {
  ++snapshots_;
  accepted_since_snapshot_ = 0;
  for (const trainscope::v1::JobStatus& job : snapshot.jobs()) {
    if (job.summary().job_id() != job_id_) continue;
    last_sequence_ = job.feed_sequence();
    Event event;
    event.type = Event::kSnapshot;
    event.snapshot = job;
    events->push_back(std::move(event));
    return true;
  }
  return false;
}

bool FeedFollower::Resnapshot(std::vector<Event>* events) {
  absl::StatusOr<trainscope::v1::FeedSnapshot> snapshot =
      source_->RequestSnapshot(job_id_, snapshot_timeout_);
  if (!snapshot.ok()) {
    events->push_back(Notice(absl::StrCat("could not re-snapshot: ", snapshot.status().message())));
    return false;
  }
  if (ApplySnapshot(*snapshot, events)) return true;
  events->push_back(Notice(absl::StrCat("re-snapshot did not include job ", job_id_,
                                        snapshot->error().empty() ? "" : ": ", snapshot->error())));
  return false;
}

void FeedFollower::HandleUpdate(trainscope::v1::FeedUpdate update, std::vector<Event>* events) {
  if (update.job_id() != job_id_) {
    events->push_back(Notice(absl::StrCat("ignored an update for job '", update.job_id(),
                                          "' on job ", job_id_, "'s topic")));
    return;
  }
  const uint64_t sequence = update.sequence();
  if (sequence == 1 && last_sequence_ > 1 && accepted_since_snapshot_ > 0) {
    // Sequences start at 1 per job: the collector started over. (Right after
    // a snapshot, a low number is only an update the snapshot already holds.)
    events->push_back(Notice(absl::StrCat("the feed restarted at #1 after #", last_sequence_,
                                          " (collector restarted?); re-snapshotting")));
    last_sequence_ = 0;
    Resnapshot(events);
  } else if (sequence > last_sequence_ + 1) {
    Event gap;
    gap.type = Event::kGap;
    gap.expected = last_sequence_ + 1;
    gap.received = sequence;
    events->push_back(std::move(gap));
    ++gaps_;
    Resnapshot(events);
  }
  if (sequence <= last_sequence_) return;  // already folded into the snapshot
  // Normally sequence == last + 1 here; past it only when the re-snapshot was
  // older than this update or failed: show the update anyway, the gap was reported.
  last_sequence_ = sequence;
  ++accepted_since_snapshot_;
  Event event;
  event.type = Event::kUpdate;
  event.update = std::move(update);
  events->push_back(std::move(event));
}

absl::StatusOr<bool> FeedFollower::Poll(absl::Duration timeout, std::vector<Event>* events) {
  absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> received = source_->Receive(timeout);
  if (!received.ok()) {
    if (absl::IsInvalidArgument(received.status())) {
      events->push_back(
          Notice(absl::StrCat("dropped a bad feed message: ", received.status().message())));
      return true;
    }
    return received.status();
  }
  if (!received->has_value()) return false;
  HandleUpdate(std::move(**received), events);
  return true;
}

}  // namespace trainscope::client

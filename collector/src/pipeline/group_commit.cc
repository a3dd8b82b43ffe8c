#include "trainscope/collector/pipeline/group_commit.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

GroupCommit::GroupCommit(std::string job_id, JobLog* log, Hooks hooks)
    : job_id_(std::move(job_id)), log_(log), hooks_(std::move(hooks)) {}

absl::Status GroupCommit::Append(v1::LogRecord& record) {
  record.set_logged_unix_ns(absl::ToUnixNanos(absl::Now()));
  needs_sync_ = true;
  if (absl::Status s = log_->Append(record); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("job ", job_id_, ": cannot append to its log: ", s.message()));
  }
  return absl::OkStatus();
}

void GroupCommit::HandOn(v1::LogRecord record) { handed_on_.push_back(std::move(record)); }

void GroupCommit::QueueFeed(v1::FeedUpdate update) {
  update.set_job_id(job_id_);
  pending_feed_.push_back(std::move(update));
}

void GroupCommit::OnDurable(Completion completion) {
  completions_.push_back(std::move(completion));
}

void GroupCommit::AfterPublish(std::function<void()> reply) {
  replies_.push_back(std::move(reply));
}

void GroupCommit::ReplyInTurn(std::function<void()> reply) {
  OnDurable([this, reply = std::move(reply)](const absl::Status&) mutable {
    AfterPublish(std::move(reply));
  });
}

void GroupCommit::Commit() {
  absl::Status sync_status = absl::OkStatus();
  if (needs_sync_) {
    needs_sync_ = false;
    if (absl::Status s = log_->Sync(); !s.ok()) {
      sync_status = absl::UnavailableError(
          absl::StrCat("job ", job_id_, ": could not make the log durable: ", s.message()));
      if (hooks_.notice)
        hooks_.notice(absl::StrCat("trainscope-collector: ", sync_status.message()));
    }
  }
  // What failed to sync is not handed on: it comes again when the agents
  // resend it.
  std::vector<v1::LogRecord> durable;
  durable.swap(handed_on_);
  if (sync_status.ok() && !durable.empty() && hooks_.durable) hooks_.durable(std::move(durable));
  PublishFeed();
  // Before the completions: a HelloAck they send finds its rank in the status.
  PublishStatus();
  std::vector<Completion> completions;
  completions.swap(completions_);
  for (Completion& completion : completions) completion(sync_status);
  // What they changed is published before any caller hears of it.
  if (!completions.empty()) status_changed_ = true;
  PublishStatus();
  std::vector<std::function<void()>> replies;
  replies.swap(replies_);
  for (std::function<void()>& reply : replies) reply();
}

void GroupCommit::Publish() {
  PublishFeed();
  PublishStatus();
}

void GroupCommit::PublishFeed() {
  if (pending_feed_.empty()) return;
  const int64_t now = absl::ToUnixNanos(absl::Now());
  for (v1::FeedUpdate& update : pending_feed_) {
    update.set_sequence(++feed_sequence_);
    update.set_published_unix_ns(now);
    if (hooks_.feed != nullptr) hooks_.feed->Publish(std::move(update));
  }
  pending_feed_.clear();
  status_changed_ = true;  // its feed_sequence
}

void GroupCommit::PublishStatus() {
  if (!status_changed_) return;
  status_changed_ = false;
  if (hooks_.publish_status) hooks_.publish_status(feed_sequence_);
}

}  // namespace trainscope::collector

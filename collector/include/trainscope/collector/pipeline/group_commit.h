// A job's group commit: what a round of the pipeline thread appended to the
// job's log becomes durable with one sync, and only then goes on, in this
// order: the durable records to whoever reads them (the analysis, a record
// sink), the round's feed updates (numbered one after the other), the job's
// status, the completions, the status again (what they changed), and last
// the replies that tell callers of their calls. So an acknowledged batch is
// durable, a status' feed_sequence names exactly the updates its state
// includes, and a status read after a reply includes what it replied to.
// When the sync fails, nothing goes on: completions get its UNAVAILABLE.
//
// Usage (the pipeline thread):
//   GroupCommit commit(job_id, log, {.feed = feed,
//                                    .durable = [&](std::vector<v1::LogRecord> r) {...},
//                                    .publish_status = [&](uint64_t feed_sequence) {...}});
//   absl::Status appended = commit.Append(record);   // in the log, not yet durable
//   if (appended.ok()) commit.HandOn(std::move(record));
//   commit.QueueFeed(update);
//   commit.OnDurable([&](const absl::Status& sync) {    // a completion
//     ApplyTheBatch(); commit.AfterPublish([=] { ack(sync); });
//   });
//   commit.ReplyInTurn([=] { refuse(why); });           // a reply from a task
//   commit.MarkStatusChanged();                         // the round's tasks ran
//   commit.Commit();                                    // the round's end
//   commit.Publish();                                   // timers queued feed updates
//
// Threading: not thread-safe; owned by the job's pipeline thread, which runs
// every hook, completion and reply.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_GROUP_COMMIT_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_GROUP_COMMIT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/publish/feed_sink.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

class GroupCommit {
 public:
  struct Hooks {
    FeedSink* feed = nullptr;  // null: updates are numbered, not sent
    // The records handed on, once durable (not called for a failed sync).
    std::function<void(std::vector<trainscope::v1::LogRecord>)> durable;
    // Publishes the job's status as of `feed_sequence` (the last update sent).
    std::function<void(uint64_t feed_sequence)> publish_status;
    std::function<void(absl::string_view)> notice;  // a failed sync
  };
  using Completion = std::function<void(const absl::Status& sync_status)>;

  // `log` must outlive the rounds that append to it.
  GroupCommit(std::string job_id, JobLog* log, Hooks hooks);

  // Stamps `record` (logged_unix_ns) and appends it; UNAVAILABLE naming the
  // job when the log refused it. Durable only once the round commits.
  absl::Status Append(trainscope::v1::LogRecord& record);
  // Hands `record` (appended) on to Hooks::durable once the round's sync made
  // it durable.
  void HandOn(trainscope::v1::LogRecord record);
  // Sends `update` (stamped with the job) in the round's feed publication.
  void QueueFeed(trainscope::v1::FeedUpdate update);
  // Runs `completion` after the round's sync, in the order queued.
  void OnDurable(Completion completion);
  // From a completion: runs `reply` once the round's completions ran and the
  // status they changed is published, in the order queued.
  void AfterPublish(std::function<void()> reply);
  // From a task: `reply` in turn with the replies of the completions queued
  // before it.
  void ReplyInTurn(std::function<void()> reply);
  // The job's state changed outside a completion (a task ran): the status is
  // published at the next chance.
  void MarkStatusChanged() { status_changed_ = true; }

  // The round's end: syncs when anything was appended, then goes on as the
  // class comment says.
  void Commit();
  // Sends the feed updates queued since, then publishes the status if it
  // changed (the timers' updates, between rounds).
  void Publish();

  uint64_t feed_sequence() const { return feed_sequence_; }

 private:
  void PublishFeed();
  void PublishStatus();

  const std::string job_id_;
  JobLog* const log_;
  const Hooks hooks_;
  bool needs_sync_ = false;
  std::vector<trainscope::v1::LogRecord> handed_on_;
  std::vector<trainscope::v1::FeedUpdate> pending_feed_;
  uint64_t feed_sequence_ = 0;
  std::vector<Completion> completions_;
  std::vector<std::function<void()>> replies_;
  bool status_changed_ = false;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_GROUP_COMMIT_H_

#include "trainscope/collector/pipeline/group_commit.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/job_pipeline_fixture.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using testing::FakeJobLog;
using ::testing::HasSubstr;
using testing::MakeBatch;
using testing::RecordingFeedSink;

v1::LogRecord BatchRecord(uint64_t sequence) {
  v1::LogRecord record;
  *record.mutable_batch()->mutable_batch() = MakeBatch(sequence);
  return record;
}

class GroupCommitTest : public ::testing::Test {
 protected:
  GroupCommit Make() {
    return GroupCommit("j", &log_,
                       {.feed = &feed_,
                        .durable =
                            [this](std::vector<v1::LogRecord> records) {
                              journal_.push_back("durable " + std::to_string(records.size()));
                              durable_ = std::move(records);
                            },
                        .publish_status =
                            [this](uint64_t feed_sequence) {
                              journal_.push_back("status " + std::to_string(feed_sequence));
                            },
                        .notice = [this](absl::string_view line) { notices_.emplace_back(line); }});
  }

  FakeJobLog log_;
  RecordingFeedSink feed_;
  std::vector<std::string> journal_;
  std::vector<v1::LogRecord> durable_;
  std::vector<std::string> notices_;
};

TEST_F(GroupCommitTest, ARoundSyncsOnceThenHandsOnPublishesCompletesAndRepliesInThatOrder) {
  GroupCommit commit = Make();
  // A task refused at once replies in turn, before the completions queued after it.
  commit.ReplyInTurn([this] { journal_.push_back("refusal"); });
  for (uint64_t sequence : {1, 2}) {
    v1::LogRecord record = BatchRecord(sequence);
    ASSERT_TRUE(commit.Append(record).ok());
    EXPECT_GT(record.logged_unix_ns(), 0);
    commit.HandOn(std::move(record));
    commit.OnDurable([this, &commit, sequence](const absl::Status& sync) {
      EXPECT_TRUE(sync.ok()) << sync;
      journal_.push_back("apply " + std::to_string(sequence));
      commit.AfterPublish(
          [this, sequence] { journal_.push_back("ack " + std::to_string(sequence)); });
    });
  }
  v1::FeedUpdate update;
  update.mutable_command()->set_command("halt");
  commit.QueueFeed(update);
  commit.MarkStatusChanged();
  EXPECT_EQ(log_.syncs(), 0);  // nothing durable before the round's end
  EXPECT_TRUE(journal_.empty());

  commit.Commit();
  EXPECT_EQ(log_.syncs(), 1);
  EXPECT_TRUE(log_.BatchSynced(2));
  EXPECT_THAT(journal_, ElementsAre("durable 2", "status 1", "apply 1", "apply 2", "status 1",
                                    "refusal", "ack 1", "ack 2"));
  ASSERT_EQ(durable_.size(), 2u);
  EXPECT_EQ(durable_[1].batch().batch().sequence(), 2u);
  const std::vector<v1::FeedUpdate> sent = feed_.updates();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].job_id(), "j");
  EXPECT_EQ(sent[0].sequence(), 1u);
  EXPECT_EQ(commit.feed_sequence(), 1u);
}

TEST_F(GroupCommitTest, AFailedSyncHandsNothingOnAndItsCompletionsGetUnavailable) {
  GroupCommit commit = Make();
  log_.set_fail_sync(true);
  v1::LogRecord record = BatchRecord(1);
  ASSERT_TRUE(commit.Append(record).ok());
  commit.HandOn(std::move(record));
  absl::Status seen;
  commit.OnDurable([&](const absl::Status& sync) { seen = sync; });
  commit.Commit();
  EXPECT_EQ(seen.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(seen.message(), HasSubstr("job j: could not make the log durable"));
  EXPECT_TRUE(durable_.empty());
  ASSERT_EQ(notices_.size(), 1u);
  // The records of the failed round are not handed on later either: the
  // agents resend them.
  log_.set_fail_sync(false);
  commit.OnDurable([&](const absl::Status& sync) { seen = sync; });
  commit.Commit();
  EXPECT_TRUE(seen.ok());
  EXPECT_TRUE(durable_.empty());
}

TEST_F(GroupCommitTest, NothingAppendedNoSyncAndTheStatusOnlyWhenSomethingChanged) {
  GroupCommit commit = Make();
  commit.Commit();
  commit.Publish();
  EXPECT_EQ(log_.syncs(), 0);
  EXPECT_TRUE(journal_.empty());
  // Updates queued between rounds (the timers') go out numbered on, with the
  // status they change.
  v1::FeedUpdate update;
  update.mutable_job()->set_job_id("j");
  commit.QueueFeed(update);
  commit.QueueFeed(update);
  commit.Publish();
  EXPECT_THAT(journal_, ElementsAre("status 2"));
  ASSERT_EQ(feed_.size(), 2u);
  EXPECT_EQ(feed_.updates()[1].sequence(), 2u);
  commit.Publish();
  EXPECT_EQ(journal_.size(), 1u);
}

}  // namespace
}  // namespace trainscope::collector

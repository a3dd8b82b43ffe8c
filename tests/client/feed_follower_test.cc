#include "trainscope/client/feed_follower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

namespace trainscope::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Event = FeedFollower::Event;

// A FeedSource that plays back a script: queued updates (or errors) and
// queued snapshots, recording what the follower asked for.
class ScriptedSource : public FeedSource {
 public:
  absl::Status Subscribe(const std::string& prefix) override {
    subscribed.push_back(prefix);
    // The follower must subscribe before it asks for the first snapshot.
    subscribed_before_snapshot = snapshot_requests == 0;
    return subscribe_status;
  }
  absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> Receive(absl::Duration) override {
    if (updates.empty()) return std::optional<trainscope::v1::FeedUpdate>();
    auto next = std::move(updates.front());
    updates.pop_front();
    return next;
  }
  absl::StatusOr<trainscope::v1::FeedSnapshot> RequestSnapshot(const std::string& job,
                                                               absl::Duration) override {
    ++snapshot_requests;
    if (snapshots.empty()) return absl::UnavailableError("no snapshot server");
    auto next = std::move(snapshots.front());
    snapshots.pop_front();
    return next;
  }
  std::string Describe() const override { return "scripted"; }

  void AddUpdate(uint64_t sequence, const std::string& job = "j") {
    trainscope::v1::FeedUpdate update;
    update.set_job_id(job);
    update.set_sequence(sequence);
    update.mutable_rank()->set_rank(static_cast<uint32_t>(sequence));
    updates.push_back(std::optional<trainscope::v1::FeedUpdate>(update));
  }
  void AddSnapshot(uint64_t sequence, const std::string& job = "j") {
    trainscope::v1::FeedSnapshot snapshot;
    trainscope::v1::JobStatus* status = snapshot.add_jobs();
    status->mutable_summary()->set_job_id(job);
    status->set_feed_sequence(sequence);
    snapshots.push_back(snapshot);
  }

  std::deque<absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>>> updates;
  std::deque<absl::StatusOr<trainscope::v1::FeedSnapshot>> snapshots;
  std::vector<std::string> subscribed;
  absl::Status subscribe_status;
  bool subscribed_before_snapshot = false;
  int snapshot_requests = 0;
};

// Polls until the script runs dry; returns every event in order.
std::vector<Event> Drain(FeedFollower& follower) {
  std::vector<Event> events;
  while (true) {
    absl::StatusOr<bool> got = follower.Poll(absl::Milliseconds(1), &events);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || !*got) return events;
  }
}

std::vector<std::string> Describe(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& event : events) {
    switch (event.type) {
      case Event::kSnapshot:
        out.push_back("snapshot@" + std::to_string(event.snapshot.feed_sequence()));
        break;
      case Event::kUpdate:
        out.push_back("update#" + std::to_string(event.update.sequence()));
        break;
      case Event::kGap:
        out.push_back("gap " + std::to_string(event.expected) + ".." +
                      std::to_string(event.received));
        break;
      case Event::kNotice:
        out.push_back("notice");
        break;
    }
  }
  return out;
}

TEST(FeedFollowerTest, SubscribesFirstThenSnapshotsThenPassesNewerUpdates) {
  ScriptedSource source;
  source.AddSnapshot(5);
  // Queued while the snapshot was taken: 4 and 5 are already in it.
  for (uint64_t sequence : {4, 5, 6, 7, 8}) source.AddUpdate(sequence);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  EXPECT_THAT(source.subscribed, ElementsAre("j/"));
  EXPECT_TRUE(source.subscribed_before_snapshot);
  EXPECT_THAT(Describe(events), ElementsAre("snapshot@5"));
  EXPECT_THAT(Describe(Drain(follower)), ElementsAre("update#6", "update#7", "update#8"));
  EXPECT_EQ(follower.last_sequence(), 8u);
  EXPECT_EQ(follower.gaps(), 0u);
}

TEST(FeedFollowerTest, GapReportsAndResnapshots) {
  ScriptedSource source;
  source.AddSnapshot(2);
  source.AddSnapshot(9);  // the re-snapshot after the gap
  for (uint64_t sequence : {3, 7, 8, 9, 10}) source.AddUpdate(sequence);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  // 7 reveals that 4..6 were lost; the new snapshot (at 9) covers 7..9.
  EXPECT_THAT(Describe(Drain(follower)),
              ElementsAre("update#3", "gap 4..7", "snapshot@9", "update#10"));
  EXPECT_EQ(follower.gaps(), 1u);
  EXPECT_EQ(follower.snapshots(), 2u);
  EXPECT_EQ(source.snapshot_requests, 2);
}

TEST(FeedFollowerTest, GapWhoseResnapshotIsOlderStillShowsTheUpdate) {
  ScriptedSource source;
  source.AddSnapshot(1);
  source.AddSnapshot(3);  // older than the update that revealed the gap
  source.AddUpdate(6);
  source.AddUpdate(7);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  EXPECT_THAT(Describe(Drain(follower)),
              ElementsAre("gap 2..6", "snapshot@3", "update#6", "update#7"));
}

TEST(FeedFollowerTest, FailedResnapshotIsANoticeAndFollowingGoesOn) {
  ScriptedSource source;
  source.AddSnapshot(1);
  source.AddUpdate(5);
  source.AddUpdate(6);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  std::vector<Event> drained = Drain(follower);
  EXPECT_THAT(Describe(drained), ElementsAre("gap 2..5", "notice", "update#5", "update#6"));
  EXPECT_THAT(drained[1].text, HasSubstr("could not re-snapshot"));
}

TEST(FeedFollowerTest, UnknownJobWaitsFromSequenceZero) {
  ScriptedSource source;
  trainscope::v1::FeedSnapshot unknown;
  unknown.set_error("unknown job j");
  source.snapshots.push_back(unknown);
  source.AddUpdate(1);
  source.AddUpdate(2);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  ASSERT_THAT(Describe(events), ElementsAre("notice"));
  EXPECT_THAT(events[0].text, HasSubstr("not known to the collector yet (unknown job j)"));
  EXPECT_THAT(Describe(Drain(follower)), ElementsAre("update#1", "update#2"));
}

TEST(FeedFollowerTest, SnapshotOfAnotherJobOnlyCountsAsUnknown) {
  ScriptedSource source;
  source.AddSnapshot(50, "other");
  source.AddUpdate(1);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  EXPECT_THAT(Describe(events), ElementsAre("notice"));
  EXPECT_THAT(Describe(Drain(follower)), ElementsAre("update#1"));
}

TEST(FeedFollowerTest, CollectorRestartStartsOverFromANewSnapshot) {
  ScriptedSource source;
  source.AddSnapshot(10);
  source.AddSnapshot(2);  // after the restart
  for (uint64_t sequence : {11, 1, 2, 3}) source.AddUpdate(sequence);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  EXPECT_THAT(Describe(Drain(follower)),
              ElementsAre("update#11", "notice", "snapshot@2", "update#3"));
}

TEST(FeedFollowerTest, StaleUpdatesRightAfterASnapshotAreNotARestart) {
  ScriptedSource source;
  source.AddSnapshot(3);
  for (uint64_t sequence : {1, 2, 3, 4}) source.AddUpdate(sequence);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  EXPECT_THAT(Describe(Drain(follower)), ElementsAre("update#4"));
  EXPECT_EQ(source.snapshot_requests, 1);
}

TEST(FeedFollowerTest, UpdateForAnotherJobIsIgnoredWithANotice) {
  ScriptedSource source;
  source.AddSnapshot(0);
  source.AddUpdate(1, "jj");
  source.AddUpdate(1);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  EXPECT_THAT(Describe(Drain(follower)), ElementsAre("notice", "update#1"));
}

TEST(FeedFollowerTest, MalformedMessageIsANoticeOtherErrorsAreFatal) {
  ScriptedSource source;
  source.AddSnapshot(0);
  source.updates.push_back(absl::InvalidArgumentError("not a FeedUpdate"));
  source.AddUpdate(1);
  source.updates.push_back(absl::InternalError("socket gone"));
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  events.clear();
  EXPECT_TRUE(*follower.Poll(absl::Milliseconds(1), &events));
  EXPECT_TRUE(*follower.Poll(absl::Milliseconds(1), &events));
  EXPECT_THAT(Describe(events), ElementsAre("notice", "update#1"));
  EXPECT_THAT(events[0].text, HasSubstr("not a FeedUpdate"));
  absl::StatusOr<bool> fatal = follower.Poll(absl::Milliseconds(1), &events);
  ASSERT_FALSE(fatal.ok());
  EXPECT_THAT(fatal.status().message(), HasSubstr("socket gone"));
}

TEST(FeedFollowerTest, QuietFeedPollsFalse) {
  ScriptedSource source;
  source.AddSnapshot(0);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  ASSERT_TRUE(follower.Start(&events).ok());
  events.clear();
  absl::StatusOr<bool> got = follower.Poll(absl::Milliseconds(1), &events);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(*got);
  EXPECT_TRUE(events.empty());
}

TEST(FeedFollowerTest, StartFailsWhenTheSnapshotServerIsAway) {
  ScriptedSource source;
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  absl::Status status = follower.Start(&events);
  EXPECT_TRUE(absl::IsUnavailable(status));
}

TEST(FeedFollowerTest, StartFailsWhenSubscribeFails) {
  ScriptedSource source;
  source.subscribe_status = absl::InvalidArgumentError("bad endpoint");
  source.AddSnapshot(0);
  FeedFollower follower(&source, "j", absl::Seconds(1));
  std::vector<Event> events;
  EXPECT_FALSE(follower.Start(&events).ok());
  EXPECT_EQ(source.snapshot_requests, 0);
}

}  // namespace
}  // namespace trainscope::client

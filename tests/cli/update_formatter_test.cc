#include "trainscope/cli/update_formatter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainscope::cli {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

trainscope::v1::FeedUpdate RankUpdate(uint64_t sequence, uint64_t events, int64_t seen_ns) {
  trainscope::v1::FeedUpdate update;
  update.set_job_id("j");
  update.set_sequence(sequence);
  update.set_published_unix_ns(seen_ns);
  trainscope::v1::RankStatus* rank = update.mutable_rank();
  rank->set_rank(3);
  rank->set_host("h");
  rank->set_pid(12);
  rank->set_connected(true);
  rank->set_events_received(events);
  rank->set_last_seen_unix_ns(seen_ns);
  return update;
}

TEST(UpdateFormatterTest, RankLineWithRateFromThePreviousUpdate) {
  UpdateFormatter formatter(absl::UTCTimeZone());
  const std::string first = formatter.Format(RankUpdate(41, 11141, kT0));
  EXPECT_EQ(first,
            "2023-11-14 22:13:20.000  #41  rank     rank 3 connected host=h pid=12 events=11,141 "
            "drops=0");
  const std::string second = formatter.Format(RankUpdate(42, 12345, kT0 + 1'000'000'000));
  EXPECT_THAT(second, EndsWith("rank 3 connected host=h pid=12 events=12,345 (+1,204/s) drops=0"));
  EXPECT_THAT(second, StartsWith("2023-11-14 22:13:21.000  #42  rank"));
}

TEST(UpdateFormatterTest, SeedGivesARateOnTheFirstUpdate) {
  trainscope::v1::JobStatus snapshot;
  trainscope::v1::RankStatus* rank = snapshot.add_ranks();
  rank->set_rank(3);
  rank->set_events_received(1000);
  rank->set_last_seen_unix_ns(kT0);
  UpdateFormatter formatter(absl::UTCTimeZone());
  formatter.Seed(snapshot);
  EXPECT_THAT(formatter.Format(RankUpdate(2, 1500, kT0 + 500'000'000)),
              HasSubstr("events=1,500 (+1,000/s)"));
}

TEST(UpdateFormatterTest, RankStatesDropsRefusedRestarts) {
  UpdateFormatter formatter(absl::UTCTimeZone());
  trainscope::v1::FeedUpdate update = RankUpdate(1, 5, kT0);
  update.mutable_rank()->set_connected(false);
  update.mutable_rank()->set_said_goodbye(true);
  update.mutable_rank()->mutable_agent_drops()->set_buffer_full(7);
  update.mutable_rank()->set_batches_refused(1);
  update.mutable_rank()->set_restart_count(2);
  EXPECT_THAT(formatter.Format(update),
              HasSubstr("rank 3 said goodbye host=h pid=12 events=5 drops=7 (buffer 7) refused=1 "
                        "restarts=2"));
  update.mutable_rank()->set_said_goodbye(false);
  EXPECT_THAT(formatter.Format(update), HasSubstr("rank 3 disconnected"));
}

TEST(UpdateFormatterTest, JobLine) {
  trainscope::v1::FeedUpdate update;
  update.set_sequence(7);
  update.set_published_unix_ns(kT0);
  trainscope::v1::JobSummary* job = update.mutable_job();
  job->set_job_id("j");
  job->set_state(trainscope::v1::JOB_STATE_RUNNING);
  job->set_ranks_connected(4);
  job->set_world_size(4);
  job->set_events_received(49380);
  job->set_events_per_second(4816);
  job->set_recording(true);
  UpdateFormatter formatter(absl::UTCTimeZone());
  EXPECT_EQ(formatter.Format(update),
            "2023-11-14 22:13:20.000  #7  job      job j running ranks=4/4 events=49,380 "
            "(4,816/s) recording=on");
  EXPECT_EQ(UpdateFormatter::KindOf(update), "job");
}

TEST(UpdateFormatterTest, CommandLine) {
  trainscope::v1::FeedUpdate update;
  update.set_sequence(8);
  update.set_published_unix_ns(kT0);
  trainscope::v1::CommandRecord* command = update.mutable_command();
  command->set_command("halt");
  command->set_requested_by("a@h");
  command->set_ranks_reached(4);
  command->set_reason("too slow");
  command->set_halt_id(3);
  command->set_halt_at_step(120);
  UpdateFormatter formatter(absl::UTCTimeZone());
  EXPECT_THAT(formatter.Format(update),
              EndsWith("#8  command  halt by a@h reached=4 reason=\"too slow\" halt_id=3 "
                       "at_step=120"));
  EXPECT_EQ(UpdateFormatter::KindOf(update), "command");
}

TEST(UpdateFormatterTest, LossAndMapsLines) {
  trainscope::v1::FeedUpdate update;
  update.set_sequence(10);
  trainscope::v1::LossState* loss = update.mutable_loss();
  loss->set_epoch(4);
  loss->set_iteration(120);
  trainscope::v1::DifficultItem* item = loss->add_items();
  item->set_item(1432);
  item->set_contribution(0.25);
  item->set_label(0);
  item->set_prediction(5);
  UpdateFormatter formatter(absl::UTCTimeZone());
  EXPECT_THAT(formatter.Format(update),
              EndsWith("#10  loss     epoch 4 iteration 120: top 1 items by loss contribution, "
                       "first item 1432 (0.25, label 0, predicted 5)"));
  EXPECT_EQ(UpdateFormatter::KindOf(update), "loss");
  update.mutable_item_snapshot()->set_item(7);
  update.mutable_item_snapshot()->add_maps();
  EXPECT_THAT(formatter.Format(update), HasSubstr("maps     item 7 maps at iteration 0"));
  EXPECT_EQ(UpdateFormatter::KindOf(update), "maps");
}

TEST(UpdateFormatterTest, EmptyBody) {
  trainscope::v1::FeedUpdate update;
  update.set_sequence(9);
  UpdateFormatter formatter(absl::UTCTimeZone());
  EXPECT_THAT(formatter.Format(update), HasSubstr("(update with no body)"));
  EXPECT_EQ(UpdateFormatter::KindOf(update), "empty");
}

}  // namespace
}  // namespace trainscope::cli

#include "trainscope/cli/replay_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trainscope/proto/protocol.h"

namespace trainscope::cli {
namespace {

using ::testing::ElementsAre;

trainscope::v1::LogRecord Opened(uint32_t rank, uint64_t instance,
                                 const std::string& job = "orig") {
  trainscope::v1::LogRecord record;
  trainscope::v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
  hello->set_protocol_version(0);  // whatever was stored, the replay sends the current one
  hello->set_job_id(job);
  hello->set_rank(rank);
  hello->set_world_size(2);
  hello->set_host("host-" + std::to_string(rank));
  hello->set_agent_instance_id(instance);
  hello->set_recording(false);
  trainscope::v1::ClockDomain* clock = hello->add_clock_domains();
  clock->set_name("monotonic");
  clock->set_realtime_minus_domain_ns(1'000'000'000'000);
  return record;
}

trainscope::v1::LogRecord Batch(uint32_t rank, uint64_t instance, uint64_t sequence, int events,
                                int64_t base_time_ns = 0) {
  trainscope::v1::LogRecord record;
  record.set_logged_unix_ns(777);
  trainscope::v1::StreamBatch* stored = record.mutable_batch();
  stored->set_rank(rank);
  stored->set_agent_instance_id(instance);
  stored->mutable_batch()->set_sequence(sequence);
  stored->mutable_batch()->set_base_time_ns(base_time_ns);
  for (int i = 0; i < events; ++i) {
    stored->mutable_batch()->add_kind(trainscope::v1::EVENT_KIND_OPERATOR);
  }
  stored->mutable_batch()->mutable_drops()->set_ring_full(sequence);
  return record;
}

trainscope::v1::LogRecord Closed(uint32_t rank, uint64_t instance, bool goodbye) {
  trainscope::v1::LogRecord record;
  record.mutable_stream_closed()->set_rank(rank);
  record.mutable_stream_closed()->set_agent_instance_id(instance);
  record.mutable_stream_closed()->set_goodbye(goodbye);
  return record;
}

class ReplayPlannerTest : public ::testing::Test {
 protected:
  ReplayPlanner MakePlanner(std::string as_job = "") {
    return ReplayPlanner({.as_job = std::move(as_job),
                          .new_instance_id = [this] { return ++next_id_; },
                          .job_token = "tok"});
  }
  std::vector<std::string> Run(ReplayPlanner& planner,
                               const std::vector<trainscope::v1::LogRecord>& records) {
    std::vector<ReplayAction> actions;
    for (const auto& record : records) planner.Consume(record, &actions);
    planner.Finish(&actions);
    actions_ = actions;
    std::vector<std::string> out;
    for (const ReplayAction& action : actions) {
      const std::string stream = std::to_string(action.stream);
      switch (action.kind) {
        case ReplayAction::kOpen:
          out.push_back("open " + stream);
          break;
        case ReplayAction::kBatch:
          out.push_back("batch " + stream + "#" +
                        std::to_string(action.message.batch().sequence()));
          break;
        case ReplayAction::kClose:
          out.push_back("close " + stream);
          break;
      }
    }
    return out;
  }
  uint64_t next_id_ = 1000;
  std::vector<ReplayAction> actions_;
};

TEST_F(ReplayPlannerTest, OneStreamPerStoredStreamWithRenumberedBatches) {
  ReplayPlanner planner = MakePlanner();
  EXPECT_THAT(Run(planner, {Opened(0, 11), Opened(1, 22), Batch(0, 11, 5, 3), Batch(1, 22, 1, 2),
                            Batch(0, 11, 6, 4), Closed(0, 11, true), Batch(1, 22, 2, 1)}),
              ElementsAre("open 0", "open 1", "batch 0#1", "batch 1#1", "batch 0#2", "close 0",
                          "batch 1#2", "close 1"));
  ASSERT_EQ(planner.streams().size(), 2u);
  const PlannedStream& first = planner.streams()[0];
  EXPECT_EQ(first.rank, 0u);
  EXPECT_EQ(first.original_instance_id, 11u);
  EXPECT_EQ(first.batches, 2u);
  EXPECT_EQ(first.events, 7u);
  EXPECT_EQ(first.first_original_sequence, 5u);
  EXPECT_EQ(first.last_original_sequence, 6u);
  EXPECT_TRUE(first.closed);
  EXPECT_EQ(planner.total_batches(), 4u);
  EXPECT_EQ(planner.total_events(), 10u);
  // The goodbye carries the last drops the agent reported and the events sent.
  EXPECT_EQ(actions_[5].message.goodbye().drops().ring_full(), 6u);
  EXPECT_EQ(actions_[5].message.goodbye().events_recorded(), 7u);
}

TEST_F(ReplayPlannerTest, HelloIsRewritten) {
  ReplayPlanner planner = MakePlanner();
  Run(planner, {Opened(1, 22)});
  const trainscope::v1::Hello& hello = actions_[0].message.hello();
  EXPECT_EQ(hello.job_id(), "orig-replay");
  EXPECT_EQ(hello.agent_instance_id(), 1001u);  // fresh, not 22
  // Protocol 1: the token rides in the Hello (no challenge answered yet).
  EXPECT_EQ(hello.protocol_version(), 1u);
  EXPECT_EQ(hello.job_token(), "tok");
  EXPECT_TRUE(hello.recording());
  // Everything else is the stored Hello.
  EXPECT_EQ(hello.rank(), 1u);
  EXPECT_EQ(hello.world_size(), 2u);
  EXPECT_EQ(hello.host(), "host-1");
  EXPECT_EQ(hello.clock_domains(0).name(), "monotonic");
}

TEST_F(ReplayPlannerTest, AsJobOverridesTheName) {
  ReplayPlanner planner = MakePlanner("again");
  Run(planner, {Opened(0, 1)});
  EXPECT_EQ(actions_[0].message.hello().job_id(), "again");
}

TEST_F(ReplayPlannerTest, DefaultNameStaysWithinTheJobIdLimit) {
  EXPECT_EQ(ReplayPlanner::DefaultReplayJobId("j"), "j-replay");
  const std::string replay = ReplayPlanner::DefaultReplayJobId(std::string(128, 'x'));
  EXPECT_EQ(replay.size(), 128u);
  EXPECT_EQ(replay.substr(121), "-replay");
}

TEST_F(ReplayPlannerTest, ReconnectWithoutGoodbyeContinuesTheSameStream) {
  ReplayPlanner planner = MakePlanner();
  EXPECT_THAT(Run(planner, {Opened(0, 11), Batch(0, 11, 1, 1), Closed(0, 11, false), Opened(0, 11),
                            Batch(0, 11, 2, 1)}),
              ElementsAre("open 0", "batch 0#1", "batch 0#2", "close 0"));
  EXPECT_EQ(planner.streams().size(), 1u);
}

TEST_F(ReplayPlannerTest, RestartedIncarnationIsANewStream) {
  ReplayPlanner planner = MakePlanner();
  EXPECT_THAT(Run(planner, {Opened(0, 11), Batch(0, 11, 1, 1), Closed(0, 11, true), Opened(0, 12),
                            Batch(0, 12, 1, 1)}),
              ElementsAre("open 0", "batch 0#1", "close 0", "open 1", "batch 1#1", "close 1"));
}

TEST_F(ReplayPlannerTest, ResentAndOrphanBatchesAreSkipped) {
  ReplayPlanner planner = MakePlanner();
  EXPECT_THAT(
      Run(planner, {Batch(3, 99, 1, 1), Opened(0, 11), Batch(0, 11, 1, 1), Batch(0, 11, 2, 1),
                    Batch(0, 11, 2, 1), Batch(0, 11, 1, 1), Batch(0, 11, 3, 1)}),
      ElementsAre("open 0", "batch 0#1", "batch 0#2", "batch 0#3", "close 0"));
  EXPECT_EQ(planner.orphan_batches(), 1u);
  EXPECT_EQ(planner.streams()[0].skipped_resends, 2u);
}

TEST_F(ReplayPlannerTest, BatchesTheCollectorRefusedAreLeftOut) {
  trainscope::v1::LogRecord refused = Batch(0, 11, 2, 0);
  refused.mutable_batch()->set_refused_reason("timestamps must not go backwards");
  trainscope::v1::LogRecord empty = Batch(0, 11, 3, 0);
  ReplayPlanner planner = MakePlanner();
  EXPECT_THAT(Run(planner, {Opened(0, 11), Batch(0, 11, 1, 2), refused, empty, Batch(0, 11, 4, 1)}),
              ElementsAre("open 0", "batch 0#1", "batch 0#2", "close 0"));
  EXPECT_EQ(planner.streams()[0].skipped_refused, 2u);
  EXPECT_EQ(planner.streams()[0].events, 3u);
  // Drop counters still come from the latest stored batch, refused or not.
  EXPECT_EQ(actions_.back().message.goodbye().drops().ring_full(), 4u);
}

TEST_F(ReplayPlannerTest, ProbesAndCommandsAreNotReplayed) {
  trainscope::v1::LogRecord probe;
  probe.mutable_probe()->set_rank(0);
  trainscope::v1::LogRecord command;
  command.mutable_command()->set_command("halt");
  ReplayPlanner planner = MakePlanner();
  EXPECT_THAT(Run(planner, {Opened(0, 11), probe, command}), ElementsAre("open 0", "close 0"));
}

TEST_F(ReplayPlannerTest, PacingTimeIsTheBatchStartOnTheWallClock) {
  ReplayPlanner planner = MakePlanner();
  Run(planner, {Opened(0, 11), Batch(0, 11, 1, 1, /*base_time_ns=*/500), Batch(0, 11, 2, 1)});
  EXPECT_EQ(actions_[1].original_unix_ns, 1'000'000'000'500);  // base + realtime offset
  EXPECT_EQ(actions_[2].original_unix_ns, 777);                // no base time: when it was logged
}

}  // namespace
}  // namespace trainscope::cli

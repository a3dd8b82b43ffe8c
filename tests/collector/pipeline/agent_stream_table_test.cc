#include "trainscope/collector/pipeline/agent_stream_table.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/store/job_state_rule.h"

namespace trainscope::collector {
namespace {

using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::MakeBatch;
using testing::MakeHello;

constexpr int64_t kNow = 1'700'000'000'000'000'000;

TEST(AgentStreamTableTest, OpensStreamsAndKeepsOneWorldSize) {
  AgentStreamTable table("j");
  EXPECT_EQ(table.world_size(), 0u);
  EXPECT_EQ(table.State(false), v1::JOB_STATE_IDLE);
  ASSERT_TRUE(table.CheckWorldSize(MakeHello("j", 0, 2, 10)).ok());
  v1::Hello hello = MakeHello("j", 0, 2, 10);
  hello.set_rack("rack-a");
  table.Open(hello, std::make_shared<FakeAgentStream>(), "peer0", 0, kNow);
  EXPECT_EQ(table.ranks().at(0).rack(), "rack-a");  // on the feed and in status
  EXPECT_EQ(table.world_size(), 2u);
  EXPECT_TRUE(table.AnyConnected());
  EXPECT_EQ(table.State(false), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(table.State(true), v1::JOB_STATE_HALTED);

  const absl::Status mismatch = table.CheckWorldSize(MakeHello("j", 1, 4, 11));
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(BadInputCause(mismatch), "hello.world_size");
}

TEST(AgentStreamTableTest, TellsAReconnectAndANewIncarnationFromADuplicateRank) {
  AgentStreamTable table("j");
  const uint64_t id =
      table.Open(MakeHello("j", 0, 2, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;

  auto reconnect = table.FindReplaced(MakeHello("j", 0, 2, 10));
  ASSERT_TRUE(reconnect.ok());
  ASSERT_TRUE(reconnect->has_value());
  EXPECT_EQ((*reconnect)->connection_id, id);
  EXPECT_EQ((*reconnect)->why, "the same agent reconnected");

  v1::Hello restarted = MakeHello("j", 0, 2, 20);
  restarted.set_restart_count(1);
  auto incarnation = table.FindReplaced(restarted);
  ASSERT_TRUE(incarnation.ok());
  ASSERT_TRUE(incarnation->has_value());
  EXPECT_THAT((*incarnation)->why, HasSubstr("restart_count 1 > 0"));

  auto duplicate = table.FindReplaced(MakeHello("j", 0, 2, 30));
  EXPECT_EQ(duplicate.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(BadInputCause(duplicate.status()), "hello.rank");

  auto other_rank = table.FindReplaced(MakeHello("j", 1, 2, 31));
  ASSERT_TRUE(other_rank.ok());
  EXPECT_FALSE(other_rank->has_value());
}

TEST(AgentStreamTableTest, AReplacedStreamsCloseLeavesItsRankConnected) {
  AgentStreamTable table("j");
  const uint64_t old_id =
      table.Open(MakeHello("j", 0, 1, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  const uint64_t new_id =
      table.Open(MakeHello("j", 0, 1, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  EXPECT_FALSE(table.IsCurrent(old_id));
  EXPECT_TRUE(table.IsCurrent(new_id));
  auto closed = table.Close(old_id, false, "", false, kNow);
  ASSERT_TRUE(closed.has_value());
  EXPECT_FALSE(closed->current);
  EXPECT_TRUE(table.ranks().at(0).connected());
  EXPECT_FALSE(table.Close(old_id, false, "", false, kNow).has_value());  // already gone
}

TEST(AgentStreamTableTest, JobStateFollowsGoodbyesAndVanishedRanks) {
  AgentStreamTable table("j");
  const uint64_t a =
      table.Open(MakeHello("j", 0, 2, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  const uint64_t b =
      table.Open(MakeHello("j", 1, 2, 11), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  table.Close(a, /*goodbye=*/true, "", false, kNow);
  EXPECT_EQ(table.State(false), v1::JOB_STATE_RUNNING);
  table.Close(b, /*goodbye=*/true, "", false, kNow);
  EXPECT_EQ(table.State(false), v1::JOB_STATE_FINISHED);

  AgentStreamTable lost("k");
  const uint64_t c =
      lost.Open(MakeHello("k", 0, 1, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  lost.Close(c, /*goodbye=*/false, "", false, kNow);
  EXPECT_EQ(lost.State(false), v1::JOB_STATE_LOST);

  // An abnormal end said counts with the vanished; a collector stopping does not.
  AgentStreamTable failed("f");
  const uint64_t d =
      failed.Open(MakeHello("f", 0, 1, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  failed.Close(d, /*goodbye=*/true, "RuntimeError: boom", false, kNow);
  EXPECT_EQ(failed.State(false), v1::JOB_STATE_LOST);
  EXPECT_EQ(failed.ranks().at(0).exit_error(), "RuntimeError: boom");

  AgentStreamTable cut("c");
  const uint64_t e =
      cut.Open(MakeHello("c", 0, 1, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow).id;
  cut.Close(e, false, "", /*collector_stopping=*/true, kNow);
  EXPECT_EQ(cut.State(false), v1::JOB_STATE_IDLE);
}

TEST(AgentStreamTableTest, CountsBatchesAndReportsChangedRanksOnce) {
  AgentStreamTable table("j");
  table.Open(MakeHello("j", 0, 1, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow);
  ASSERT_EQ(table.TakeChangedRanks().size(), 1u);
  EXPECT_FALSE(table.HasChangedRanks());
  table.OnBatch(0, MakeBatch(1, 3), /*refused=*/false, 100, kNow + 1);
  table.OnBatch(0, MakeBatch(2, 5), /*refused=*/true, 100, kNow + 2);
  const std::vector<v1::RankStatus> changed = table.TakeChangedRanks();
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].events_received(), 3u);
  EXPECT_EQ(changed[0].batches_received(), 1u);
  EXPECT_EQ(changed[0].batches_refused(), 1u);
  EXPECT_EQ(changed[0].last_sequence(), 2u);
  v1::JobSummary summary;
  table.FillSummary(&summary);
  EXPECT_EQ(summary.events_received(), 3u);
  EXPECT_EQ(summary.bytes_received(), 100u);
  EXPECT_EQ(summary.last_event_unix_ns(), kNow + 1);
}

TEST(AgentStreamTableTest, ProbesGoOnlyToAcknowledgedStreamsAndRepliesMatchThem) {
  AgentStreamTable table("j");
  auto acked = std::make_shared<FakeAgentStream>();
  auto waiting = std::make_shared<FakeAgentStream>();
  const uint64_t id = table.Open(MakeHello("j", 0, 2, 10), acked, "", 0, kNow).id;
  table.Open(MakeHello("j", 1, 2, 11), waiting, "", 0, kNow);
  table.Find(id)->hello_acked = true;
  table.SendProbes(kNow + 5);
  ASSERT_EQ(acked->state().sent.size(), 1u);
  EXPECT_TRUE(waiting->state().sent.empty());
  v1::ProbeReply reply;
  reply.set_probe_id(acked->state().sent[0].probe().probe_id());
  auto sample = table.TakeProbeReply(id, reply, kNow + 9);
  ASSERT_TRUE(sample.has_value());
  EXPECT_EQ(sample->rank(), 0u);
  EXPECT_EQ(sample->collector_send_unix_ns(), kNow + 5);
  EXPECT_EQ(sample->collector_receive_unix_ns(), kNow + 9);
  EXPECT_FALSE(table.TakeProbeReply(id, reply, kNow + 10).has_value());  // answered already
  EXPECT_EQ(table.SendToAcked(v1::Control()), 1u);                       // counted, nothing sent
  EXPECT_EQ(acked->state().sent.size(), 1u);
}

TEST(AgentStreamTableTest, RecoversRanksFromTheLog) {
  JobLogState state;
  StreamProgress first;
  first.hello = MakeHello("j", 0, 2, 10);
  first.events = 5;
  first.closed = true;  // vanished
  StreamProgress second;
  second.hello = MakeHello("j", 0, 2, 20);
  second.hello.set_restart_count(1);
  first.hello.set_rack("rack-old");
  second.hello.set_rack("rack-new");
  second.events = 7;
  second.goodbye = true;
  second.closed = true;
  state.streams[{0, 10}] = first;
  state.streams[{0, 20}] = second;
  AgentStreamTable table("j");
  table.Recover(state);
  EXPECT_EQ(table.world_size(), 2u);
  const v1::RankStatus& r = table.ranks().at(0);
  EXPECT_EQ(r.events_received(), 12u);    // summed over incarnations
  EXPECT_EQ(r.agent_instance_id(), 20u);  // the latest identity
  EXPECT_EQ(r.rack(), "rack-new");
  EXPECT_EQ(table.State(false), v1::JOB_STATE_FINISHED);
  // The published status renews every recovered rank once.
  EXPECT_EQ(table.TakeRanksToRepublish(), std::vector<uint32_t>{0});
  EXPECT_TRUE(table.TakeRanksToRepublish().empty());
}

// The published status and the feed each take the changed ranks at their own
// pace: taking them for one leaves them to the other.
TEST(AgentStreamTableTest, TheStatusAndTheFeedTakeChangedRanksApart) {
  AgentStreamTable table("j");
  table.Open(MakeHello("j", 2, 4, 10), std::make_shared<FakeAgentStream>(), "", 0, kNow);
  table.Open(MakeHello("j", 1, 4, 11), std::make_shared<FakeAgentStream>(), "", 0, kNow);
  EXPECT_EQ(table.TakeRanksToRepublish(), (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(table.TakeRanksToRepublish().empty());
  EXPECT_EQ(table.TakeChangedRanks().size(), 2u);  // still the feed's
  table.OnBatch(2, MakeBatch(1, 3), /*refused=*/false, 100, kNow + 1);
  EXPECT_EQ(table.TakeChangedRanks().size(), 1u);
  EXPECT_EQ(table.TakeRanksToRepublish(), std::vector<uint32_t>{2});
}

// A stored log's state (what the viewer shows for --data-dir) is the state a
// collector recovering the same log reports: one rule (issue 23.5).
TEST(AgentStreamTableTest, ARecoveredTableReportsTheStoredJobsState) {
  auto stream = [](uint32_t rank, uint64_t instance, uint32_t restarts, bool goodbye, bool closed,
                   std::string error) {
    StreamProgress p;
    p.hello = MakeHello("j", rank, 2, instance);
    p.hello.set_restart_count(restarts);
    p.goodbye = goodbye;
    p.closed = closed;
    p.exit_error = std::move(error);
    return p;
  };
  v1::CommandRecord halt;
  halt.set_command("halt");
  std::vector<JobLogState> logs(5);
  logs[0].streams[{0, 1}] = stream(0, 1, 0, true, true, "");
  logs[0].streams[{1, 2}] = stream(1, 2, 0, true, true, "");
  logs[1] = logs[0];
  logs[1].commands.push_back(halt);                              // finished, then halted
  logs[2].streams[{0, 1}] = stream(0, 1, 0, false, true, "");    // vanished
  logs[2].streams[{0, 3}] = stream(0, 3, 1, true, true, "");     // came back, ended
  logs[3].streams[{0, 1}] = stream(0, 1, 0, true, true, "OOM");  // said an error
  logs[4].streams[{0, 1}] = stream(0, 1, 0, false, false, "");   // open at the end
  const std::vector<v1::JobState> expected = {v1::JOB_STATE_FINISHED, v1::JOB_STATE_HALTED,
                                              v1::JOB_STATE_FINISHED, v1::JOB_STATE_LOST,
                                              v1::JOB_STATE_IDLE};
  for (size_t i = 0; i < logs.size(); ++i) {
    AgentStreamTable table("j");
    table.Recover(logs[i]);
    const bool halted = !logs[i].commands.empty();
    EXPECT_EQ(table.State(halted), expected[i]) << "log " << i;
    EXPECT_EQ(StoredJobState(logs[i]), expected[i]) << "log " << i;
  }
}

}  // namespace
}  // namespace trainscope::collector

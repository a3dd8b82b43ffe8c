// JobPipeline's commands end to end (CommandRunner and JobTokenKeeper
// behind the pipeline): halt, recording and the loss-contribution switch
// reach every rank, later HelloAcks and the log, and survive a collector
// restart; commands need the job's token.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/job_pipeline_fixture.h"
#include "trainscope/collector/pipeline/job_pipeline.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::collector {
namespace {

using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::JobPipelineTest;
using testing::MakeBatch;
using testing::MakeHello;

TEST_F(JobPipelineTest, HaltIsLoggedAndDeliveredToEveryConnectedRank) {
  auto opened = JobPipeline::Open("j", Options(), nullptr);  // the real log
  ASSERT_TRUE(opened.ok()) << opened.status();
  JobPipeline& pipeline = **opened;
  auto rank0 = std::make_shared<FakeAgentStream>();
  auto rank1 = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(pipeline, MakeHello("j", 0, 2, 11, "t"), rank0).ok());
  ASSERT_TRUE(Attach(pipeline, MakeHello("j", 1, 2, 22, "t"), rank1).ok());

  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.token = "t";
  halt.reason = "loss diverged";
  halt.requested_by = "alice";
  absl::StatusOr<v1::CommandReply> reply = Run(pipeline, halt);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->ranks_reached(), 2u);
  for (const auto& stream : {rank0, rank1}) {
    ASSERT_TRUE(stream->WaitFor(v1::Control::kHalt));
    const v1::HaltRequest h = stream->state().Find(v1::Control::kHalt)->halt();
    EXPECT_EQ(h.reason(), "loss diverged");
    EXPECT_EQ(h.requested_by(), "alice");
    EXPECT_EQ(h.halt_id(), 1u);
  }
  const v1::JobStatus status = Snapshot(pipeline);
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_HALTED);
  ASSERT_EQ(status.commands_size(), 1);
  EXPECT_EQ(status.commands(0).command(), "halt");

  pipeline.Stop();
  auto reader = LogReader::Open(dir_.path() / "jobs" / "j");
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<v1::CommandRecord> logged;
  ReadStats stats;
  ASSERT_TRUE(reader
                  ->ForEach(
                      [&](const v1::LogRecord& r) {
                        if (r.has_command()) logged.push_back(r.command());
                        return true;
                      },
                      &stats)
                  .ok());
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].command(), "halt");
  EXPECT_EQ(logged[0].reason(), "loss diverged");
  EXPECT_EQ(logged[0].requested_by(), "alice");
  EXPECT_EQ(logged[0].ranks_reached(), 2u);
  EXPECT_GT(logged[0].requested_unix_ns(), 0);
  bool published = false;
  for (const auto& u : feed_.updates()) published |= u.has_command();
  EXPECT_TRUE(published);
}

TEST_F(JobPipelineTest, AHaltOfAFinishedOrAlreadyHaltedJobIsRefused) {
  auto pipeline = OpenFake(Options());
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.token = "t";
  halt.reason = "first";
  halt.requested_by = "alice";
  // Halted already: a second halt would only move the boundary.
  auto rank0 = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached = Attach(*pipeline, MakeHello("j", 0, 1, 11, "t"), rank0);
  ASSERT_TRUE(attached.ok());
  ASSERT_TRUE(Run(*pipeline, halt).ok());
  halt.reason = "second";
  absl::StatusOr<v1::CommandReply> again = Run(*pipeline, halt);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("job j is already halted: halt 1 by alice"));
  // Nothing of the refused halt was logged or sent.
  int halts_logged = 0;
  for (const v1::LogRecord& r : fake_log_->records()) halts_logged += r.has_command() ? 1 : 0;
  EXPECT_EQ(halts_logged, 1);
  int halts_sent = 0;
  for (const v1::Control& c : rank0->state().sent) halts_sent += c.has_halt() ? 1 : 0;
  EXPECT_EQ(halts_sent, 1);
}

TEST_F(JobPipelineTest, AHaltOfAFinishedJobIsRefused) {
  auto pipeline = OpenFake(Options());
  auto rank0 = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached = Attach(*pipeline, MakeHello("j", 0, 1, 11, "t"), rank0);
  ASSERT_TRUE(attached.ok());
  pipeline->Detach(attached->connection_id, v1::Goodbye(), "agent closed the stream");
  ASSERT_EQ(Snapshot(*pipeline).summary().state(), v1::JOB_STATE_FINISHED);
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.token = "t";
  absl::StatusOr<v1::CommandReply> reply = Run(*pipeline, halt);
  ASSERT_FALSE(reply.ok()) << reply->message();
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(reply.status().message(), HasSubstr("job j is finished (every rank said goodbye)"));
  const v1::JobStatus status = Snapshot(*pipeline);
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_FINISHED);  // not "halted"
  EXPECT_EQ(status.commands_size(), 0);
  // A wrong token is still refused as such first: the state is not told to
  // whoever does not hold the token.
  halt.token = "guess";
  EXPECT_EQ(Run(*pipeline, halt).status().code(), absl::StatusCode::kPermissionDenied);
}

// A batch of operator events with STEP_MARK events for `steps` mixed in.
v1::StreamBatch BatchWithSteps(uint64_t sequence, uint32_t rank, uint64_t instance,
                               const std::vector<uint64_t>& steps) {
  v1::StreamBatch batch;
  batch.set_rank(rank);
  batch.set_agent_instance_id(instance);
  *batch.mutable_batch() = MakeBatch(sequence);
  for (uint64_t step : steps) {
    v1::EventBatch* b = batch.mutable_batch();
    b->add_kind(v1::EVENT_KIND_STEP_MARK);
    b->add_start_delta_ns(10);
    b->add_duration_ns(0);
    b->add_name(0);
    b->add_thread(7);
    b->add_detail(0);
    b->add_value(step);
  }
  return batch;
}

TEST_F(JobPipelineTest, HaltStopsEveryRankAMarginPastTheFurthestStep) {
  JobPipelineOptions options = Options();
  options.halt_step_margin = 3;
  options.halt_lead = absl::ZeroDuration();  // the step margin alone (the lead: command_runner_test)
  auto pipeline = OpenFake(options);
  auto rank0 = std::make_shared<FakeAgentStream>();
  auto rank1 = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> a0 = Attach(*pipeline, MakeHello("j", 0, 3, 11, "t"), rank0);
  absl::StatusOr<AttachResult> a1 = Attach(*pipeline, MakeHello("j", 1, 3, 22, "t"), rank1);
  ASSERT_TRUE(a0.ok() && a1.ok());
  // Rank 1 is ahead (step 41), rank 0 behind; step numbers in one batch need not be sorted.
  std::atomic<int> durable{0};
  auto count = [&](absl::Status s) {
    EXPECT_TRUE(s.ok()) << s;
    ++durable;
  };
  ASSERT_TRUE(
      pipeline->AppendBatch(a0->connection_id, BatchWithSteps(1, 0, 11, {7, 9, 8}), 100, count)
          .ok());
  ASSERT_TRUE(
      pipeline->AppendBatch(a1->connection_id, BatchWithSteps(1, 1, 22, {40, 41}), 100, count)
          .ok());
  ASSERT_TRUE(
      pipeline->AppendBatch(a0->connection_id, BatchWithSteps(2, 0, 11, {}), 100, count).ok());
  // A refused batch only leaves a marker: its steps do not count.
  v1::StreamBatch refused = BatchWithSteps(2, 1, 22, {900});
  refused.set_refused_reason("bad timestamps");
  ASSERT_TRUE(pipeline->AppendBatch(a1->connection_id, std::move(refused), 100, count).ok());

  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.token = "t";
  halt.reason = "efficiency";
  absl::StatusOr<v1::CommandReply> reply = Run(*pipeline, halt);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(durable.load(), 4);
  EXPECT_THAT(reply->message(), HasSubstr("halting at step 44"));
  for (const auto& stream : {rank0, rank1}) {
    ASSERT_TRUE(stream->WaitFor(v1::Control::kHalt));
    EXPECT_EQ(stream->state().Find(v1::Control::kHalt)->halt().halt_at_step(), 44u);
  }
  const v1::JobStatus status = Snapshot(*pipeline);
  ASSERT_EQ(status.commands_size(), 1);
  EXPECT_EQ(status.commands(0).halt_at_step(), 44u);
  bool logged = false;
  for (const v1::LogRecord& r : fake_log_->records()) {
    if (r.has_command()) logged = r.command().halt_at_step() == 44u;
  }
  EXPECT_TRUE(logged) << "the command record in the log carries halt_at_step";

  // A rank that connects after the halt is told right after its HelloAck.
  auto rank2 = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 2, 3, 33, "t"), rank2).ok());
  ASSERT_TRUE(rank2->WaitFor(v1::Control::kHalt));
  const std::vector<v1::Control> sent = rank2->state().sent;
  ASSERT_GE(sent.size(), 2u);
  EXPECT_TRUE(sent[0].has_hello_ack());
  EXPECT_TRUE(sent[1].has_halt());
  EXPECT_EQ(sent[1].halt().halt_at_step(), 44u);
  EXPECT_EQ(sent[1].halt().halt_id(), 1u);
  EXPECT_EQ(sent[1].halt().reason(), "efficiency");
  // Ranks connected at the halt got it exactly once.
  int halts_to_rank0 = 0;
  for (const v1::Control& c : rank0->state().sent) halts_to_rank0 += c.has_halt() ? 1 : 0;
  EXPECT_EQ(halts_to_rank0, 1);
}

TEST_F(JobPipelineTest, HaltBeforeAnyStepMeansTheNextBoundary) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached = Attach(*pipeline, MakeHello("j", 0, 1, 11, "t"), stream);
  ASSERT_TRUE(attached.ok());
  ASSERT_TRUE(
      pipeline->AppendBatch(attached->connection_id, Batch(1), 100, [](absl::Status) {}).ok());
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.token = "t";
  absl::StatusOr<v1::CommandReply> reply = Run(*pipeline, halt);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(reply->message(), HasSubstr("halting at the next step boundary"));
  ASSERT_TRUE(stream->WaitFor(v1::Control::kHalt));
  EXPECT_EQ(stream->state().Find(v1::Control::kHalt)->halt().halt_at_step(), 0u);
}

TEST_F(JobPipelineTest, AHaltedJobStaysHaltedForRanksThatConnectAfterARestart) {
  {
    auto opened = JobPipeline::Open("j", Options(), nullptr);
    ASSERT_TRUE(opened.ok()) << opened.status();
    auto stream = std::make_shared<FakeAgentStream>();
    absl::StatusOr<AttachResult> attached = Attach(**opened, MakeHello("j", 0, 2, 11, "t"), stream);
    ASSERT_TRUE(attached.ok());
    ASSERT_TRUE((*opened)
                    ->AppendBatch(attached->connection_id, BatchWithSteps(1, 0, 11, {5}), 100,
                                  [](absl::Status) {})
                    .ok());
    JobCommand halt;
    halt.kind = JobCommand::Kind::kHalt;
    halt.token = "t";
    halt.reason = "r";
    ASSERT_TRUE(Run(**opened, halt).ok());
    (*opened)->Stop();
  }
  auto reopened = JobPipeline::Open("j", Options(), nullptr);  // recovers from the log
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  auto late = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(**reopened, MakeHello("j", 1, 2, 22, "t"), late).ok());
  ASSERT_TRUE(late->WaitFor(v1::Control::kHalt));
  const v1::HaltRequest h = late->state().Find(v1::Control::kHalt)->halt();
  EXPECT_EQ(h.halt_at_step(), 7u);  // 5 + the default margin of 2
  EXPECT_EQ(h.reason(), "r");
  EXPECT_EQ(h.halt_id(), 1u);
}

TEST_F(JobPipelineTest, TheLossContributionSwitchSurvivesARestart) {
  {
    auto opened = JobPipeline::Open("j", Options(), nullptr);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_TRUE(
        Attach(**opened, MakeHello("j", 0, 2, 11, "t"), std::make_shared<FakeAgentStream>()).ok());
    JobCommand disable;
    disable.kind = JobCommand::Kind::kDisableLossContribution;
    disable.token = "t";
    ASSERT_TRUE(Run(**opened, disable).ok());
    (*opened)->Stop();
  }
  auto reopened = JobPipeline::Open("j", Options(), nullptr);  // recovers from the log
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  auto late = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(**reopened, MakeHello("j", 1, 2, 22, "t"), late).ok());
  const v1::HelloAck ack = late->state().Find(v1::Control::kHelloAck)->hello_ack();
  ASSERT_TRUE(ack.has_loss_contribution());
  EXPECT_FALSE(ack.loss_contribution());
}

TEST_F(JobPipelineTest, CommandsNeedTheJobToken) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11, "t"), stream).ok());
  JobCommand halt;
  halt.token = "wrong";
  absl::StatusOr<v1::CommandReply> reply = Run(*pipeline, halt);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("job j: wrong job token"));
  halt.token = "";
  reply = Run(*pipeline, halt);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("missing job token"));
  EXPECT_EQ(counters_.count("command.token"), 2u);
  EXPECT_EQ(Snapshot(*pipeline).commands_size(), 0);
  EXPECT_EQ(stream->state().Find(v1::Control::kHalt), nullptr);
}

TEST_F(JobPipelineTest, RecordingCommandReachesRanksAndLaterHelloAcks) {
  auto pipeline = OpenFake(Options());
  auto rank0 = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 2, 11, "t"), rank0).ok());
  JobCommand enable;
  enable.kind = JobCommand::Kind::kEnableRecording;
  enable.token = "t";
  enable.sampling_period = 10;
  ASSERT_TRUE(Run(*pipeline, enable).ok());
  ASSERT_TRUE(rank0->WaitFor(v1::Control::kSetRecording));
  EXPECT_TRUE(rank0->state().Find(v1::Control::kSetRecording)->set_recording().enabled());
  auto rank1 = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 1, 2, 22, "t"), rank1).ok());
  const v1::HelloAck ack = rank1->state().Find(v1::Control::kHelloAck)->hello_ack();
  EXPECT_TRUE(ack.recording());
  EXPECT_EQ(ack.sampling_period(), 10u);
  EXPECT_TRUE(Snapshot(*pipeline).summary().recording());
}

TEST_F(JobPipelineTest, LossContributionSwitchReachesRanksAndLaterHelloAcksApartFromRecording) {
  auto pipeline = OpenFake(Options());
  auto rank0 = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 2, 11, "t"), rank0).ok());
  // No command yet: the training script's own setting stands.
  EXPECT_FALSE(rank0->state().Find(v1::Control::kHelloAck)->hello_ack().has_loss_contribution());
  EXPECT_FALSE(Snapshot(*pipeline).summary().has_loss_contribution());
  JobCommand disable;
  disable.kind = JobCommand::Kind::kDisableLossContribution;
  disable.token = "t";
  ASSERT_TRUE(Run(*pipeline, disable).ok());
  ASSERT_TRUE(rank0->WaitFor(v1::Control::kSetLossContribution));
  EXPECT_FALSE(
      rank0->state().Find(v1::Control::kSetLossContribution)->set_loss_contribution().enabled());
  EXPECT_EQ(rank0->state().Find(v1::Control::kSetRecording), nullptr);
  auto rank1 = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 1, 2, 22, "t"), rank1).ok());
  const v1::HelloAck ack = rank1->state().Find(v1::Control::kHelloAck)->hello_ack();
  ASSERT_TRUE(ack.has_loss_contribution());
  EXPECT_FALSE(ack.loss_contribution());
  const v1::JobStatus status = Snapshot(*pipeline);
  ASSERT_EQ(status.commands_size(), 1);
  EXPECT_EQ(status.commands(0).command(), "disable-loss-contribution");
  // The summary (status, the feed, the viewer's buttons) says the switch too.
  ASSERT_TRUE(status.summary().has_loss_contribution());
  EXPECT_FALSE(status.summary().loss_contribution());
  EXPECT_FALSE(status.summary().recording());
}

}  // namespace
}  // namespace trainscope::collector

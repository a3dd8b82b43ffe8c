#include "trainscope/collector/pipeline/job_pipeline.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/event_batch_builder.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::collector {
namespace {

using testing::EventBatchBuilder;
using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::kWait;
using testing::MakeBatch;
using testing::MakeHello;
using testing::RecordingFeedSink;
using testing::ScopedTempDir;

// An in-memory JobLog whose Sync can be made to fail; it records the order of
// appends and syncs so that tests can check what was durable when.
class FakeJobLog : public JobLog {
 public:
  absl::Status Append(const v1::LogRecord& record) override {
    absl::MutexLock lock(&mu_);
    records_.push_back(record);
    FoldLogRecord(record, &state_);
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    absl::MutexLock lock(&mu_);
    ++syncs_;
    if (fail_sync_) return absl::DataLossError("disk on fire");
    synced_ = records_.size();
    return absl::OkStatus();
  }
  const JobLogState& state() const override { return state_; }  // pipeline thread only
  uint64_t bytes_written() const override { return 0; }
  std::vector<SegmentInfo> segments() const override { return {}; }

  void set_fail_sync(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_sync_ = fail;
  }
  int syncs() const {
    absl::MutexLock lock(&mu_);
    return syncs_;
  }
  // Whether the batch with `sequence` was appended before the last good sync.
  bool BatchSynced(uint64_t sequence) const {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < synced_; ++i) {
      if (records_[i].has_batch() && records_[i].batch().batch().sequence() == sequence)
        return true;
    }
    return false;
  }
  std::vector<v1::LogRecord> records() const {
    absl::MutexLock lock(&mu_);
    return records_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<v1::LogRecord> records_;
  size_t synced_ = 0;
  int syncs_ = 0;
  bool fail_sync_ = false;
  JobLogState state_;
};

class JobPipelineTest : public ::testing::Test {
 protected:
  JobPipelineOptions Options() {
    JobPipelineOptions options;
    options.data_dir = dir_.path();
    options.fsync = false;
    options.use_index = false;
    options.probe_interval = absl::ZeroDuration();
    options.feed = &feed_;
    options.counters = &counters_;
    options.notice = [](absl::string_view) {};
    return options;
  }

  std::unique_ptr<JobPipeline> OpenFake(JobPipelineOptions options) {
    auto log = std::make_unique<FakeJobLog>();
    fake_log_ = log.get();
    auto pipeline = JobPipeline::OpenWithLog("j", std::move(options), std::move(log));
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    return std::move(*pipeline);
  }

  absl::StatusOr<AttachResult> Attach(JobPipeline& pipeline, v1::Hello hello,
                                      std::shared_ptr<FakeAgentStream> stream) {
    absl::Notification done;
    absl::StatusOr<AttachResult> result;
    EXPECT_TRUE(pipeline
                    .Attach({std::move(hello), std::move(stream), "peer"},
                            [&](absl::StatusOr<AttachResult> r) {
                              result = std::move(r);
                              done.Notify();
                            })
                    .ok());
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return result;
  }

  v1::StreamBatch Batch(uint64_t sequence, uint32_t rank = 0, uint64_t instance = 11) {
    v1::StreamBatch batch;
    batch.set_rank(rank);
    batch.set_agent_instance_id(instance);
    *batch.mutable_batch() = MakeBatch(sequence);
    return batch;
  }

  absl::StatusOr<v1::CommandReply> Run(JobPipeline& pipeline, JobCommand command) {
    absl::Notification done;
    absl::StatusOr<v1::CommandReply> reply;
    pipeline.RunCommand(std::move(command), [&](absl::StatusOr<v1::CommandReply> r) {
      reply = std::move(r);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return reply;
  }

  v1::JobStatus Snapshot(JobPipeline& pipeline) {
    absl::Notification done;
    v1::JobStatus status;
    pipeline.Snapshot([&](v1::JobStatus s) {
      status = std::move(s);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return status;
  }

  ScopedTempDir dir_;
  RecordingFeedSink feed_;
  BadInputCounters counters_{absl::Seconds(10), nullptr, [](absl::string_view) {}};
  FakeJobLog* fake_log_ = nullptr;
};

TEST_F(JobPipelineTest, GroupCommitAcknowledgesOnlyAfterOneSyncForAllQueuedBatches) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  // Hold the pipeline thread inside the attach completion while three batches queue up.
  absl::Notification attached, release;
  int syncs_at_attach = 0;
  ASSERT_TRUE(pipeline
                  ->Attach({MakeHello("j", 0, 1, 11), stream, "peer"},
                           [&](absl::StatusOr<AttachResult> r) {
                             ASSERT_TRUE(r.ok()) << r.status();
                             syncs_at_attach = fake_log_->syncs();
                             attached.Notify();
                             release.WaitForNotificationWithTimeout(kWait);
                           })
                  .ok());
  ASSERT_TRUE(attached.WaitForNotificationWithTimeout(kWait));
  absl::Mutex mu;
  std::vector<std::pair<uint64_t, bool>> acked;  // sequence, synced when acknowledged
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_TRUE(pipeline
                    ->AppendBatch(1, Batch(seq), 100,
                                  [&, seq](absl::Status s) {
                                    EXPECT_TRUE(s.ok()) << s;
                                    absl::MutexLock lock(&mu);
                                    acked.emplace_back(seq, fake_log_->BatchSynced(seq));
                                  })
                    .ok());
  }
  release.Notify();
  absl::MutexLock lock(&mu);
  ASSERT_TRUE(mu.AwaitWithTimeout(
      absl::Condition(
          +[](std::vector<std::pair<uint64_t, bool>>* a) { return a->size() == 3; }, &acked),
      kWait));
  EXPECT_EQ(acked, (std::vector<std::pair<uint64_t, bool>>{{1, true}, {2, true}, {3, true}}));
  EXPECT_EQ(fake_log_->syncs() - syncs_at_attach, 1);
}

TEST_F(JobPipelineTest, FailedSyncAcknowledgesNothing) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11), stream).ok());
  fake_log_->set_fail_sync(true);
  absl::Notification done;
  absl::Status durable;
  ASSERT_TRUE(pipeline
                  ->AppendBatch(1, Batch(1), 100,
                                [&](absl::Status s) {
                                  durable = s;
                                  done.Notify();
                                })
                  .ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(durable.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(durable.message()),
              HasSubstr("could not make the log durable: disk on fire"));
  // A hello whose opening cannot be made durable is refused too.
  auto other = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> second = Attach(*pipeline, MakeHello("j", 0, 1, 22), other);
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(other->state().Find(v1::Control::kHelloAck), nullptr);
}

TEST_F(JobPipelineTest, FeedSequencesAreContiguousAndRankUpdatesCoalesced) {
  JobPipelineOptions options = Options();
  options.rank_update_interval = absl::Hours(1);  // at most one flush during the test
  options.summary_update_interval = absl::Hours(1);
  auto pipeline = OpenFake(options);
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11), stream).ok());
  std::atomic<int> durable{0};
  for (uint64_t seq = 1; seq <= 50; ++seq) {
    ASSERT_TRUE(pipeline->AppendBatch(1, Batch(seq), 100, [&](absl::Status) { ++durable; }).ok());
  }
  pipeline->Stop();  // flushes what was coalesced
  EXPECT_EQ(durable.load(), 50);
  const std::vector<v1::FeedUpdate> updates = feed_.updates();
  ASSERT_FALSE(updates.empty());
  int rank_updates = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    EXPECT_EQ(updates[i].sequence(), i + 1) << "feed sequence numbers must have no gaps";
    EXPECT_EQ(updates[i].job_id(), "j");
    if (updates[i].has_rank()) ++rank_updates;
  }
  EXPECT_LE(rank_updates, 2) << "50 batches must not produce 50 rank updates";
  const v1::FeedUpdate* last_rank = nullptr;
  for (const auto& u : updates) {
    if (u.has_rank()) last_rank = &u;
  }
  ASSERT_NE(last_rank, nullptr);
  EXPECT_EQ(last_rank->rank().events_received(), 150u);
  EXPECT_EQ(last_rank->rank().batches_received(), 50u);
}

TEST_F(JobPipelineTest, SnapshotSequenceNamesExactlyThePublishedUpdates) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11), stream).ok());
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    ASSERT_TRUE(pipeline->AppendBatch(1, Batch(seq), 100, [](absl::Status) {}).ok());
  }
  absl::Notification done;
  uint64_t snapshot_sequence = 0;
  size_t published_at_snapshot = 0;
  pipeline->Snapshot([&](v1::JobStatus status) {
    snapshot_sequence = status.feed_sequence();
    published_at_snapshot = feed_.size();
    EXPECT_EQ(status.ranks_size(), 1);
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kWait));
  EXPECT_GT(snapshot_sequence, 0u);
  EXPECT_EQ(published_at_snapshot, snapshot_sequence);
  // Later changes carry later sequence numbers.
  ASSERT_TRUE(pipeline->AppendBatch(1, Batch(6), 100, [](absl::Status) {}).ok());
  pipeline->Stop();
  const auto updates = feed_.updates();
  ASSERT_GT(updates.size(), published_at_snapshot);
  EXPECT_GT(updates.back().sequence(), snapshot_sequence);
}

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

TEST_F(JobPipelineTest, ProbesGoToConnectedStreamsAndRepliesAreLogged) {
  JobPipelineOptions options = Options();
  options.probe_interval = absl::Milliseconds(1);
  auto pipeline = OpenFake(options);
  auto stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached = Attach(*pipeline, MakeHello("j", 2, 4, 11), stream);
  ASSERT_TRUE(attached.ok());
  ASSERT_TRUE(stream->WaitFor(v1::Control::kProbe));
  const v1::ProbeRequest probe = stream->state().Find(v1::Control::kProbe)->probe();
  v1::ProbeReply reply;
  reply.set_probe_id(probe.probe_id());
  reply.set_agent_receive_ns(5);
  reply.set_agent_send_ns(6);
  pipeline->RecordProbeReply(attached->connection_id, reply, probe.collector_send_unix_ns() + 100);
  v1::ProbeReply unknown;
  unknown.set_probe_id(987654321);
  pipeline->RecordProbeReply(attached->connection_id, unknown, 0);
  pipeline->Stop();
  std::vector<v1::ProbeSample> samples;
  for (const auto& r : fake_log_->records()) {
    if (r.has_probe()) samples.push_back(r.probe());
  }
  ASSERT_EQ(samples.size(), 1u);  // the unknown probe id is ignored
  EXPECT_EQ(samples[0].rank(), 2u);
  EXPECT_EQ(samples[0].collector_send_unix_ns(), probe.collector_send_unix_ns());
  EXPECT_EQ(samples[0].collector_receive_unix_ns(), probe.collector_send_unix_ns() + 100);
  EXPECT_EQ(samples[0].reply().agent_send_ns(), 6);
}

TEST_F(JobPipelineTest, WorldSizeMustMatchTheJob) {
  auto pipeline = OpenFake(Options());
  ASSERT_TRUE(
      Attach(*pipeline, MakeHello("j", 0, 4, 11), std::make_shared<FakeAgentStream>()).ok());
  absl::StatusOr<AttachResult> other =
      Attach(*pipeline, MakeHello("j", 1, 8, 22), std::make_shared<FakeAgentStream>());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(other.status().message()),
              HasSubstr("hello.world_size 8 does not match the job's world size 4"));
}

TEST_F(JobPipelineTest, EndStreamsFinishesLiveStreamsAfterTheirAcksAndRefusesNewOnes) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached = Attach(*pipeline, MakeHello("j", 0, 1, 11), stream);
  ASSERT_TRUE(attached.ok());
  absl::Notification durable;
  ASSERT_TRUE(pipeline
                  ->AppendBatch(attached->connection_id, Batch(1), 100,
                                [&](absl::Status s) {
                                  EXPECT_TRUE(s.ok());
                                  EXPECT_FALSE(stream->state().finished.has_value())
                                      << "ack before the end";
                                  durable.Notify();
                                })
                  .ok());
  pipeline->EndStreams(absl::UnavailableError("shutting down"));
  ASSERT_TRUE(stream->WaitForFinish());
  EXPECT_TRUE(durable.HasBeenNotified());
  EXPECT_EQ(stream->state().finished->code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<AttachResult> late =
      Attach(*pipeline, MakeHello("j", 0, 1, 22), std::make_shared<FakeAgentStream>());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(JobPipelineTest, TheIndexListsTheJobAndItsStreams) {
  JobPipelineOptions options = Options();
  options.use_index = true;
  auto opened = JobPipeline::Open("indexed", options, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_TRUE(
      Attach(**opened, MakeHello("indexed", 0, 2, 11), std::make_shared<FakeAgentStream>()).ok());
  ASSERT_TRUE(
      Attach(**opened, MakeHello("indexed", 1, 2, 22), std::make_shared<FakeAgentStream>()).ok());
  (*opened)->Stop();  // writes what the index still lacks
  auto index = LogIndex::Open(dir_.path() / "index.sqlite");
  ASSERT_TRUE(index.ok()) << index.status();
  auto jobs = (*index)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job_id, "indexed");
  EXPECT_EQ((*jobs)[0].world_size, 2u);
  EXPECT_EQ((*jobs)[0].streams, 2u);
}

TEST_F(JobPipelineTest, CallsAfterStopFailWithUnavailable) {
  auto pipeline = OpenFake(Options());
  pipeline->Stop();
  EXPECT_EQ(pipeline->AppendBatch(1, Batch(1), 1, [](absl::Status) { FAIL(); }).code(),
            absl::StatusCode::kUnavailable);
  absl::StatusOr<v1::CommandReply> reply = Run(*pipeline, JobCommand{});
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
}


TEST_F(JobPipelineTest, AnalysisPublishesStepsClocksAndOperatorsAndAnswersQueries) {
  auto pipeline = OpenFake(Options());
  std::vector<uint64_t> connection(2);
  for (uint32_t rank : {0u, 1u}) {
    auto attached = Attach(*pipeline, MakeHello("j", rank, 2, 11 + rank),
                           std::make_shared<FakeAgentStream>());
    ASSERT_TRUE(attached.ok()) << attached.status();
    connection[rank] = attached->connection_id;
  }
  // Three steps on both ranks: an operator, an all-reduce, the next step's mark.
  for (uint64_t step = 0; step < 3; ++step) {
    for (uint32_t rank : {0u, 1u}) {
      const int64_t t0 = static_cast<int64_t>(step) * 10'000'000 + 1'000'000'000;
      EventBatchBuilder b(step + 1);
      b.Operator("aten::mm", t0, t0 + 4'000'000);
      b.Collective("gloo:all_reduce", t0 + 4'000'000, t0 + 8'000'000,
                   v1::COLLECTIVE_KIND_ALL_REDUCE, "", step + 1, 1024);
      b.StepMark(t0 + 10'000'000, step + 1);
      v1::StreamBatch batch;
      batch.set_rank(rank);
      batch.set_agent_instance_id(11 + rank);
      *batch.mutable_batch() = b.Build();
      ASSERT_TRUE(pipeline->AppendBatch(connection[rank], std::move(batch), 100,
                                        [](absl::Status) {}).ok());
    }
  }
  // Steps 0 and 1 have closed on both ranks (step 2 waits for its end marks).
  auto count = [&](auto has) {
    int n = 0;
    for (const v1::FeedUpdate& u : feed_.updates()) n += has(u) ? 1 : 0;
    return n;
  };
  const absl::Time deadline = absl::Now() + kWait;
  while (count([](const v1::FeedUpdate& u) { return u.has_step(); }) < 2 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(count([](const v1::FeedUpdate& u) { return u.has_step(); }), 2);
  EXPECT_EQ(count([](const v1::FeedUpdate& u) { return u.has_operators(); }), 2);
  for (const v1::FeedUpdate& u : feed_.updates()) {
    if (u.has_step()) {
      EXPECT_EQ(u.step().devices_size(), 2);
    }
  }

  absl::Notification answered;
  v1::FeedSnapshot reply;
  v1::SnapshotRequest request;
  request.set_job_id("j");
  request.mutable_steps();
  request.mutable_marey();
  pipeline->Query(request, [&](v1::FeedSnapshot r) {
    reply = std::move(r);
    answered.Notify();
  });
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(reply.steps_size(), 2);
  EXPECT_EQ(reply.marey().operators().operators_size(), 2 * 2 * 2);  // 2 steps x 2 ranks x 2 ops
  EXPECT_EQ(reply.clocks().devices_size(), 2);
  pipeline->Stop();
}

TEST_F(JobPipelineTest, WithoutAnalysisQueriesSaySo) {
  JobPipelineOptions options = Options();
  options.analysis = false;
  auto pipeline = OpenFake(options);
  v1::FeedSnapshot reply;
  v1::SnapshotRequest request;
  request.mutable_steps();
  pipeline->Query(request, [&](v1::FeedSnapshot r) { reply = std::move(r); });
  EXPECT_THAT(reply.error(), HasSubstr("without analysis"));
}

}  // namespace
}  // namespace trainscope::collector

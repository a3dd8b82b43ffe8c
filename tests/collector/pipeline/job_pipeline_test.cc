#include "trainscope/collector/pipeline/job_pipeline.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/event_batch_builder.h"
#include "testing/job_pipeline_fixture.h"
#include "trainscope/base/mutex.h"
#include "trainscope/base/notification.h"

namespace trainscope::collector {
namespace {

using testing::EventBatchBuilder;
using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::JobPipelineTest;
using testing::kWait;
using testing::MakeBatch;
using testing::MakeHello;

TEST_F(JobPipelineTest, GroupCommitAcknowledgesOnlyAfterOneSyncForAllQueuedBatches) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  // Hold the pipeline thread inside the attach completion while three batches queue up.
  base::Notification attached, release;
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
  base::Mutex mu;
  base::CondVar acked_changed;
  std::vector<std::pair<uint64_t, bool>> acked;  // sequence, synced when acknowledged; under mu
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_TRUE(pipeline
                    ->AppendBatch(1, Batch(seq), 100,
                                  [&, seq](absl::Status s) {
                                    EXPECT_TRUE(s.ok()) << s;
                                    base::MutexLock lock(&mu);
                                    acked.emplace_back(seq, fake_log_->BatchSynced(seq));
                                    acked_changed.SignalAll();
                                  })
                    .ok());
  }
  release.Notify();
  const absl::Time deadline = absl::Now() + kWait;
  base::MutexLock lock(&mu);
  while (acked.size() < 3 && !acked_changed.WaitWithDeadline(&mu, deadline)) {
  }
  ASSERT_EQ(acked.size(), 3u);
  EXPECT_EQ(acked, (std::vector<std::pair<uint64_t, bool>>{{1, true}, {2, true}, {3, true}}));
  EXPECT_EQ(fake_log_->syncs() - syncs_at_attach, 1);
}

TEST_F(JobPipelineTest, FailedSyncAcknowledgesNothing) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11), stream).ok());
  fake_log_->set_fail_sync(true);
  base::Notification done;
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
  base::Notification done;
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

// Status() reads what the pipeline thread published: it answers while that
// thread is busy, and what a caller was told (an ack, a HelloAck, a command's
// reply) is in it already.
TEST_F(JobPipelineTest, StatusAnswersWhileThePipelineThreadIsHeldAndIncludesWhatWasAcked) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 2, 11, "t"), stream).ok());
  v1::JobStatus status = pipeline->Status();
  ASSERT_EQ(status.ranks_size(), 1);
  EXPECT_TRUE(status.ranks(0).connected());
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_RUNNING);

  base::Notification acked, release;
  std::atomic<bool> holding{false};
  ASSERT_TRUE(pipeline
                  ->AppendBatch(1, Batch(1), 100,
                                [&](absl::Status s) {
                                  EXPECT_TRUE(s.ok()) << s;
                                  holding = true;
                                  acked.Notify();
                                  release.WaitForNotificationWithTimeout(kWait);
                                  holding = false;
                                })
                  .ok());
  ASSERT_TRUE(acked.WaitForNotificationWithTimeout(kWait));
  ASSERT_TRUE(pipeline->AppendBatch(1, Batch(2), 100, [](absl::Status) {}).ok());  // queued
  status = pipeline->Status();
  const v1::JobSummary summary = pipeline->summary();
  EXPECT_TRUE(holding);  // answered while the pipeline thread is still in the ack
  release.Notify();
  ASSERT_EQ(status.ranks_size(), 1);
  EXPECT_EQ(status.ranks(0).events_received(), 3u);  // the acked batch, not the queued one
  EXPECT_EQ(status.ranks(0).last_sequence(), 1u);
  EXPECT_EQ(status.summary().events_received(), 3u);
  EXPECT_EQ(summary.events_received(), 3u);

  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.token = "t";
  halt.reason = "enough";
  ASSERT_TRUE(Run(*pipeline, halt).ok());
  status = pipeline->Status();
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_HALTED);
  ASSERT_EQ(status.commands_size(), 1);
  EXPECT_EQ(status.commands(0).reason(), "enough");
  EXPECT_EQ(status.ranks(0).events_received(), 6u);  // batch 2, acked before the halt ran
  pipeline->Stop();
  EXPECT_EQ(pipeline->Status().summary().job_id(), "j");  // still readable once stopped
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

// Records what a RecordSink is handed (the tier's publisher in production).
class RecordingSink : public RecordSink {
 public:
  void OnDurable(absl::string_view job_id, const v1::LogRecord& record) override {
    base::MutexLock lock(&mu_);
    seen_.push_back(absl::StrCat(job_id, ":", record.body_case()));
  }
  std::vector<std::string> seen() const {
    base::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  mutable base::Mutex mu_;
  std::vector<std::string> seen_ ABSL_GUARDED_BY(mu_);
};

TEST_F(JobPipelineTest, ARecordSinkGetsTheStreamsDurableRecordsInLogOrder) {
  RecordingSink sink;
  JobPipelineOptions options = Options();
  options.record_sink = &sink;
  options.analysis = false;  // the sink alone must still get them
  auto pipeline = OpenFake(options);
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11), stream).ok());
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    base::Notification durable;
    ASSERT_TRUE(
        pipeline->AppendBatch(1, Batch(seq), 100, [&](absl::Status) { durable.Notify(); }).ok());
    ASSERT_TRUE(durable.WaitForNotificationWithTimeout(kWait));
  }
  v1::StreamBatch refused = Batch(3);
  refused.set_refused_reason("EventBatch.kind: bad");
  base::Notification refused_done;
  ASSERT_TRUE(
      pipeline->AppendBatch(1, refused, 100, [&](absl::Status) { refused_done.Notify(); }).ok());
  ASSERT_TRUE(refused_done.WaitForNotificationWithTimeout(kWait));
  pipeline->Detach(1, v1::Goodbye(), "goodbye");
  pipeline->Stop();
  const std::string opened = absl::StrCat("j:", v1::LogRecord::kStreamOpened);
  const std::string batch = absl::StrCat("j:", v1::LogRecord::kBatch);
  const std::string closed = absl::StrCat("j:", v1::LogRecord::kStreamClosed);
  // The refused batch's marker is logged but not handed on.
  EXPECT_THAT(sink.seen(), ::testing::ElementsAre(opened, batch, batch, closed));
}

TEST_F(JobPipelineTest, ARecordSinkGetsNothingThatFailedToSync) {
  RecordingSink sink;
  JobPipelineOptions options = Options();
  options.record_sink = &sink;
  auto pipeline = OpenFake(options);
  auto stream = std::make_shared<FakeAgentStream>();
  ASSERT_TRUE(Attach(*pipeline, MakeHello("j", 0, 1, 11), stream).ok());
  fake_log_->set_fail_sync(true);
  base::Notification done;
  ASSERT_TRUE(pipeline->AppendBatch(1, Batch(1), 100, [&](absl::Status) { done.Notify(); }).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kWait));
  pipeline->Stop();
  EXPECT_EQ(sink.seen().size(), 1u);  // the opening only
}

// What a refusal says is AttachHandshake's (attach_handshake_test.cc); here:
// the caller gets it and the job's status counts it.
TEST_F(JobPipelineTest, ARefusedHelloFailsItsAttachAndShowsInTheJobsStatus) {
  auto pipeline = OpenFake(Options());
  ASSERT_TRUE(
      Attach(*pipeline, MakeHello("j", 0, 4, 11), std::make_shared<FakeAgentStream>()).ok());
  auto refused_stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> other = Attach(*pipeline, MakeHello("j", 1, 8, 22), refused_stream);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused_stream->state().Find(v1::Control::kHelloAck), nullptr);
  const v1::JobStatus status = Snapshot(*pipeline);
  EXPECT_EQ(status.summary().hellos_refused(), 1u);
  EXPECT_THAT(status.summary().last_hello_refusal(), HasSubstr("hello.world_size 8"));
  EXPECT_EQ(status.ranks_size(), 1);
}

TEST_F(JobPipelineTest, EndStreamsFinishesLiveStreamsAfterTheirAcksAndRefusesNewOnes) {
  auto pipeline = OpenFake(Options());
  auto stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached = Attach(*pipeline, MakeHello("j", 0, 1, 11), stream);
  ASSERT_TRUE(attached.ok());
  base::Notification durable;
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
    auto attached =
        Attach(*pipeline, MakeHello("j", rank, 2, 11 + rank), std::make_shared<FakeAgentStream>());
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
      ASSERT_TRUE(
          pipeline->AppendBatch(connection[rank], std::move(batch), 100, [](absl::Status) {}).ok());
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

  base::Notification answered;
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

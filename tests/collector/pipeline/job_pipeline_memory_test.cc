// A job's analysis memory: budgets shown in the job's status, and the
// operators freed once every rank said goodbye (issue 21.2).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/event_batch_builder.h"
#include "testing/job_pipeline_fixture.h"
#include "trainscope/base/notification.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {
namespace {

using testing::EventBatchBuilder;
using testing::FakeAgentStream;
using testing::JobPipelineTest;
using testing::kWait;
using testing::MakeHello;

v1::JobStatus StatusOf(JobPipeline& pipeline) {
  base::Notification got;
  v1::JobStatus status;
  pipeline.Snapshot([&](v1::JobStatus s) {
    status = std::move(s);
    got.Notify();
  });
  EXPECT_TRUE(got.WaitForNotificationWithTimeout(kWait));
  return status;
}

// Waits until the status satisfies `done` (the analysis runs on its own
// thread and publishes its counters after each round).
template <typename Pred>
v1::JobStatus WaitForStatus(JobPipeline& pipeline, Pred done) {
  const absl::Time deadline = absl::Now() + kWait;
  v1::JobStatus status = StatusOf(pipeline);
  while (!done(status) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    status = StatusOf(pipeline);
  }
  return status;
}

TEST_F(JobPipelineTest, NamesPastTheBudgetAndAFinishedJobsReleaseShowInStatus) {
  JobPipelineOptions options = Options();
  options.analyzer.strings.max_names = 20;
  options.summary_update_interval = absl::Milliseconds(10);
  options.rank_update_interval = absl::Milliseconds(10);
  options.release_finished_after = absl::ZeroDuration();  // at once (default: 10 min)
  auto pipeline = OpenFake(options);
  auto attached = Attach(*pipeline, MakeHello("j", 0, 1, 11), std::make_shared<FakeAgentStream>());
  ASSERT_TRUE(attached.ok()) << attached.status();
  // 100 steps, each with an operator of a name never seen before.
  constexpr uint64_t kSteps = 100;
  for (uint64_t step = 0; step < kSteps; ++step) {
    const int64_t t0 = static_cast<int64_t>(step) * 10'000'000 + 1'000'000'000;
    EventBatchBuilder b(step + 1);
    b.Operator(absl::StrCat("fresh_op_", step), t0, t0 + 4'000'000);
    b.StepMark(t0 + 10'000'000, step + 1);
    v1::StreamBatch batch;
    batch.set_rank(0);
    batch.set_agent_instance_id(11);
    *batch.mutable_batch() = b.Build();
    ASSERT_TRUE(
        pipeline->AppendBatch(attached->connection_id, std::move(batch), 100, [](absl::Status) {})
            .ok());
  }
  v1::JobStatus status = WaitForStatus(*pipeline, [](const v1::JobStatus& s) {
    return s.analysis_memory().names_over_budget() >= kSteps - 20;
  });
  ASSERT_TRUE(status.has_analysis_memory());
  EXPECT_EQ(status.analysis_memory().names(), 20u);
  EXPECT_EQ(status.analysis_memory().name_budget(), 20u);
  EXPECT_GE(status.analysis_memory().names_over_budget(), kSteps - 20);
  EXPECT_GT(status.analysis_memory().operators_held(), 0u);
  EXPECT_FALSE(status.analysis_memory().released());

  // Goodbye: the job is finished; the analysis frees its operators.
  v1::Goodbye goodbye;
  pipeline->Detach(attached->connection_id, goodbye, "agent closed the stream");
  status = WaitForStatus(*pipeline,
                         [](const v1::JobStatus& s) { return s.analysis_memory().released(); });
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_FINISHED);
  EXPECT_TRUE(status.analysis_memory().released());
  EXPECT_EQ(status.analysis_memory().operators_held(), 0u);
  // The summary (the feed, `trainscope jobs`, Prometheus) carries the count
  // too; nothing changes it any more once the job ended.
  EXPECT_EQ(status.summary().names_over_budget(), status.analysis_memory().names_over_budget());

  // The steps stay queryable.
  base::Notification answered;
  v1::FeedSnapshot reply;
  v1::SnapshotRequest request;
  request.set_job_id("j");
  request.mutable_steps();
  pipeline->Query(request, [&](v1::FeedSnapshot r) {
    reply = std::move(r);
    answered.Notify();
  });
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(kWait));
  EXPECT_GE(reply.steps_size(), static_cast<int>(kSteps) - 1);
  pipeline->Stop();
}

TEST_F(JobPipelineTest, AFinishedJobKeepsItsOperatorsForExportUntilTheReleaseDelay) {
  JobPipelineOptions options = Options();
  options.summary_update_interval = absl::Milliseconds(10);
  options.rank_update_interval = absl::Milliseconds(10);
  options.release_finished_after = absl::Hours(1);
  auto pipeline = OpenFake(options);
  auto attached = Attach(*pipeline, MakeHello("j", 0, 1, 11), std::make_shared<FakeAgentStream>());
  ASSERT_TRUE(attached.ok()) << attached.status();
  v1::Goodbye goodbye;
  pipeline->Detach(attached->connection_id, goodbye, "agent closed the stream");
  // The job is over, but within the delay (`trainscope export` right after
  // a run) its analysis keeps the operators.
  v1::JobStatus status = WaitForStatus(*pipeline, [](const v1::JobStatus& s) {
    return s.summary().state() == v1::JOB_STATE_FINISHED;
  });
  absl::SleepFor(absl::Milliseconds(100));  // many timer rounds: none may release
  status = WaitForStatus(*pipeline, [](const v1::JobStatus&) { return true; });
  EXPECT_FALSE(status.analysis_memory().released());
}

}  // namespace
}  // namespace trainscope::collector

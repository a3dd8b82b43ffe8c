// JobPipeline: how a job ends. Ranks that say goodbye finish the job; a rank
// whose stream closes without goodbye is lost_device only once its peers went
// on without it (after the grace), never when the whole job ends; a job whose
// ranks vanished is lost, also after the collector reopens it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/event_batch_builder.h"
#include "testing/job_pipeline_fixture.h"
#include "trainscope/base/notification.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using testing::EventBatchBuilder;
using testing::FakeAgentStream;
using testing::kWait;
using testing::MakeHello;

constexpr uint32_t kRanks = 4;

class JobPipelineLostTest : public testing::JobPipelineTest {
 protected:
  // Grace long enough that only the event under test can end it.
  JobPipelineOptions LostOptions(absl::Duration grace = absl::Hours(1)) {
    JobPipelineOptions options = Options();
    options.lost_device_grace = grace;
    options.lost_device_together = absl::Milliseconds(200);
    options.lost_device_grace_steps = 3;
    return options;
  }

  void AttachAll(JobPipeline& pipeline, uint64_t instance_base = 11) {
    connection_.assign(kRanks, 0);
    for (uint32_t rank = 0; rank < kRanks; ++rank) {
      auto attached =
          Attach(pipeline, MakeHello("j", rank, kRanks, instance_base + rank, "lost-test-token"),
                 std::make_shared<FakeAgentStream>());
      ASSERT_TRUE(attached.ok()) << attached.status();
      connection_[rank] = attached->connection_id;
    }
  }

  // Step marks up to `last_step` from `rank` (what the pipeline reads to know
  // how far each rank got).
  void Steps(JobPipeline& pipeline, uint32_t rank, uint64_t first_step, uint64_t last_step,
             uint64_t instance_base = 11) {
    EventBatchBuilder b(++sequence_[rank]);
    for (uint64_t step = first_step; step <= last_step; ++step) {
      b.StepMark(1'000'000'000 + static_cast<int64_t>(step) * 10'000'000, step);
    }
    v1::StreamBatch batch;
    batch.set_rank(rank);
    batch.set_agent_instance_id(instance_base + rank);
    *batch.mutable_batch() = b.Build();
    ASSERT_TRUE(
        pipeline.AppendBatch(connection_[rank], std::move(batch), 100, [](absl::Status) {}).ok());
  }

  void End(JobPipeline& pipeline, uint32_t rank, bool goodbye, std::string error = "") {
    std::optional<v1::Goodbye> bye;
    if (goodbye) bye.emplace().set_error(std::move(error));
    pipeline.Detach(connection_[rank], bye, goodbye ? "goodbye" : "stream reset");
  }

  std::vector<v1::Alert> LostAlerts(JobPipeline& pipeline) {
    base::Notification done;
    std::vector<v1::Alert> alerts;
    pipeline.Alerts(v1::AlertQuery(), [&](std::vector<v1::Alert> a) {
      alerts = std::move(a);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    std::vector<v1::Alert> lost;
    for (const v1::Alert& a : alerts) {
      if (a.rule() == "lost_device") lost.push_back(a);
    }
    return lost;
  }

  std::vector<uint64_t> connection_;
  uint64_t sequence_[kRanks] = {};
};

TEST_F(JobPipelineLostTest, EveryRankSayingGoodbyeFinishesTheJobWithoutAlerts) {
  auto pipeline = OpenFake(LostOptions());
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 20);
  for (uint32_t rank = 0; rank < kRanks; ++rank) End(*pipeline, rank, /*goodbye=*/true);
  EXPECT_TRUE(LostAlerts(*pipeline).empty());
  EXPECT_EQ(Snapshot(*pipeline).summary().state(), v1::JOB_STATE_FINISHED);
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, ARankThatEndsWithoutGoodbyeAsItsPeersSayGoodbyeIsNoAlert) {
  auto pipeline = OpenFake(LostOptions());
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 20);
  End(*pipeline, 2, /*goodbye=*/false);  // e.g. a script that leaves through os._exit
  EXPECT_EQ(Snapshot(*pipeline).summary().state(), v1::JOB_STATE_RUNNING);
  for (uint32_t rank : {0u, 1u, 3u}) End(*pipeline, rank, /*goodbye=*/true);
  EXPECT_TRUE(LostAlerts(*pipeline).empty());
  // Every rank gone, one without goodbye: the job did not finish cleanly.
  EXPECT_EQ(Snapshot(*pipeline).summary().state(), v1::JOB_STATE_LOST);
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, ARankThatVanishesWhileItsPeersStayIsLostAfterTheGrace) {
  auto pipeline = OpenFake(LostOptions(absl::Milliseconds(300)));
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  End(*pipeline, 1, /*goodbye=*/false);
  std::vector<v1::Alert> lost;
  const absl::Time deadline = absl::Now() + kWait;
  while ((lost = LostAlerts(*pipeline)).empty() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].state(), v1::ALERT_STATE_RAISED);
  EXPECT_THAT(lost[0].ranks(), ElementsAre(1u));
  EXPECT_EQ(lost[0].step(), 40u);
  EXPECT_EQ(Snapshot(*pipeline).summary().state(), v1::JOB_STATE_RUNNING);
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, NoAlertBeforeTheGraceWhileNothingElseHappened) {
  auto pipeline = OpenFake(LostOptions());
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  End(*pipeline, 1, /*goodbye=*/false);
  Steps(*pipeline, 0, 41, 42);  // fewer than lost_device_grace_steps past rank 1's last
  EXPECT_TRUE(LostAlerts(*pipeline).empty());
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, APeerGoingStepsPastAVanishedRankRaisesAtOnce) {
  auto pipeline = OpenFake(LostOptions());
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  End(*pipeline, 3, /*goodbye=*/false);
  Steps(*pipeline, 0, 41, 43);  // lost_device_grace_steps past rank 3's last
  std::vector<v1::Alert> lost = LostAlerts(*pipeline);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_THAT(lost[0].ranks(), ElementsAre(3u));
  EXPECT_EQ(lost[0].step(), 40u);
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, WhenEveryRankVanishesTheFirstToGoIsNamed) {
  // A killed rank: its peers fail in their next collective or the launcher
  // kills them, all without goodbye. The first to go is the cause.
  auto pipeline = OpenFake(LostOptions());
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  End(*pipeline, 1, /*goodbye=*/false);
  EXPECT_TRUE(LostAlerts(*pipeline).empty());  // the grace runs
  absl::SleepFor(absl::Milliseconds(400));     // past lost_device_together
  for (uint32_t rank : {2u, 0u, 3u}) End(*pipeline, rank, /*goodbye=*/false);
  std::vector<v1::Alert> lost = LostAlerts(*pipeline);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_THAT(lost[0].ranks(), ElementsAre(1u));
  EXPECT_EQ(Snapshot(*pipeline).summary().state(), v1::JOB_STATE_LOST);
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, RanksThatVanishTogetherAreNamedTogether) {
  // Rank 1 dies; rank 2, in the broken collective with it, aborts a moment
  // later and its close may reach the collector first: both are named. The
  // launcher kills ranks 0 and 3 later: they followed.
  JobPipelineOptions options = LostOptions();
  options.lost_device_together = absl::Milliseconds(200);
  auto pipeline = OpenFake(options);
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  for (uint32_t rank : {2u, 1u}) End(*pipeline, rank, /*goodbye=*/false);
  EXPECT_TRUE(LostAlerts(*pipeline).empty());  // the grace runs
  absl::SleepFor(absl::Milliseconds(400));
  for (uint32_t rank : {0u, 3u}) End(*pipeline, rank, /*goodbye=*/false);
  std::vector<uint32_t> named;
  for (const v1::Alert& a : LostAlerts(*pipeline)) named.push_back(a.ranks(0));
  EXPECT_THAT(named, ::testing::UnorderedElementsAre(1u, 2u));
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, PeersThatFailAfterTheVanishedRankAreNotMistakenForIt) {
  // Rank 1 is killed; its peers' collectives break and they end with the
  // error, saying so (Goodbye.error), before the collector has seen rank 1's
  // stream close: whatever the order, rank 1 alone vanished and is named.
  auto pipeline = OpenFake(LostOptions());
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  for (uint32_t rank : {2u, 0u}) End(*pipeline, rank, /*goodbye=*/true, "RuntimeError: gloo");
  End(*pipeline, 1, /*goodbye=*/false);
  End(*pipeline, 3, /*goodbye=*/true, "RuntimeError: gloo");
  std::vector<v1::Alert> lost = LostAlerts(*pipeline);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_THAT(lost[0].ranks(), ElementsAre(1u));
  const v1::JobStatus snapshot = Snapshot(*pipeline);
  EXPECT_EQ(snapshot.summary().state(), v1::JOB_STATE_LOST);
  for (const v1::RankStatus& r : snapshot.ranks()) {
    EXPECT_EQ(r.exit_error(), r.rank() == 1 ? "" : "RuntimeError: gloo") << r.rank();
  }
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, ARankBackWithinTheGraceIsNoAlert) {
  auto pipeline = OpenFake(LostOptions(absl::Milliseconds(200)));
  AttachAll(*pipeline);
  for (uint32_t rank = 0; rank < kRanks; ++rank) Steps(*pipeline, rank, 1, 40);
  End(*pipeline, 2, /*goodbye=*/false);
  auto back = Attach(*pipeline, MakeHello("j", 2, kRanks, 99, "lost-test-token"),
                     std::make_shared<FakeAgentStream>());
  ASSERT_TRUE(back.ok()) << back.status();
  absl::SleepFor(absl::Milliseconds(600));  // well past the grace
  EXPECT_TRUE(LostAlerts(*pipeline).empty());
  pipeline->Stop();
}

TEST_F(JobPipelineLostTest, AReopenedJobKeepsHowItEnded) {
  auto open = [&](const std::string& job) {
    RecoveryReport report;
    auto pipeline = JobPipeline::Open(job, LostOptions(), &report);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    return std::move(*pipeline);
  };
  {
    auto finished = open("finished");
    AttachAll(*finished);
    for (uint32_t rank = 0; rank < kRanks; ++rank) End(*finished, rank, /*goodbye=*/true);
    EXPECT_EQ(Snapshot(*finished).summary().state(), v1::JOB_STATE_FINISHED);
    finished->Stop();
    auto lost = open("lost");
    AttachAll(*lost);
    for (uint32_t rank = 0; rank < kRanks; ++rank) End(*lost, rank, /*goodbye=*/false);
    EXPECT_EQ(Snapshot(*lost).summary().state(), v1::JOB_STATE_LOST);
    lost->Stop();
    auto running = open("running");  // the collector stops while the ranks run
    AttachAll(*running);
    running->Stop();
  }
  EXPECT_EQ(Snapshot(*open("finished")).summary().state(), v1::JOB_STATE_FINISHED);
  EXPECT_EQ(Snapshot(*open("lost")).summary().state(), v1::JOB_STATE_LOST);
  // Its ranks may reconnect: not known to be lost.
  EXPECT_EQ(Snapshot(*open("running")).summary().state(), v1::JOB_STATE_IDLE);
}

}  // namespace
}  // namespace trainscope::collector

#include "trainscope/collector/pipeline/job_status_builder.h"

#include <memory>

#include "gtest/gtest.h"
#include "testing/collector_test_util.h"

namespace trainscope::collector {
namespace {

using testing::FakeAgentStream;
using testing::MakeBatch;
using testing::MakeHello;
using testing::ScopedTempDir;

constexpr int64_t kCreated = 1'700'000'000'000'000'000;

class JobStatusBuilderTest : public ::testing::Test {
 protected:
  JobStatusBuilderTest()
      : tokens_("j", dir_.path(), JobToken{"secret", false}),
        commands_("j", {.steps = 2, .lead_ns = 0}, &tokens_),
        alerts_("j", AlertStage::Options{.enabled = false,
                                         .rules = {},
                                         .max_alerts_kept = 10,
                                         .notice = [](absl::string_view) {}}),
        status_("j", kCreated, /*name_budget=*/1234, &streams_, &commands_, &alerts_) {}

  // Runs `kind` to completion as the pipeline does.
  void Run(JobCommand::Kind kind) {
    JobCommand command;
    command.kind = kind;
    commands_.Commit(commands_.Prepare(command, {.now_unix_ns = kCreated}));
  }

  // The full status as a reader gets it: published to a board (the ranks
  // changed since the last call), read back, the analysis' memory added.
  v1::JobStatus Status(double events_per_second, uint64_t feed_sequence) {
    status_.Publish(events_per_second, feed_sequence, streams_.TakeRanksToRepublish(), &board_);
    v1::JobStatus status = board_.Read();
    status_.AddAnalysisMemory(&status);
    return status;
  }

  ScopedTempDir dir_;
  JobStatusBoard board_;
  AgentStreamTable streams_{"j"};
  JobTokenKeeper tokens_;
  CommandRunner commands_;
  AlertStage alerts_;
  JobStatusBuilder status_;
};

TEST_F(JobStatusBuilderTest, ANewJobSaysWhatItIsAndWhenItBegan) {
  const v1::JobSummary summary = status_.Summary(12.5);
  EXPECT_EQ(summary.job_id(), "j");
  EXPECT_EQ(summary.state(), v1::JOB_STATE_IDLE);
  EXPECT_EQ(summary.created_unix_ns(), kCreated);
  EXPECT_DOUBLE_EQ(summary.events_per_second(), 12.5);
  EXPECT_EQ(summary.open_alerts(), 0u);
  EXPECT_EQ(status_.created_unix_ns(), kCreated);

  const v1::JobStatus status = Status(12.5, /*feed_sequence=*/7);
  EXPECT_EQ(status.summary().job_id(), "j");
  EXPECT_EQ(status.feed_sequence(), 7u);
  EXPECT_EQ(status.ranks_size(), 0);
  EXPECT_FALSE(status.has_recovery());
  EXPECT_FALSE(status.has_analysis_memory());  // no analysis
}

TEST_F(JobStatusBuilderTest, RanksAndTheStateComeFromTheStreams) {
  streams_.Open(MakeHello("j", 0, 2, 10), std::make_shared<FakeAgentStream>(), "p0", 0, kCreated);
  streams_.Open(MakeHello("j", 1, 2, 11), std::make_shared<FakeAgentStream>(), "p1", 0, kCreated);
  const v1::JobStatus status = Status(0, 0);
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_RUNNING);
  ASSERT_EQ(status.ranks_size(), 2);
  EXPECT_EQ(status.ranks(0).rank(), 0u);
  EXPECT_EQ(status.ranks(1).rank(), 1u);
}

TEST_F(JobStatusBuilderTest, APublishRenewsTheRowsOfTheRanksThatChanged) {
  streams_.Open(MakeHello("j", 0, 2, 10), std::make_shared<FakeAgentStream>(), "p0", 0, kCreated);
  streams_.Open(MakeHello("j", 1, 2, 11), std::make_shared<FakeAgentStream>(), "p1", 0, kCreated);
  ASSERT_EQ(Status(0, 1).ranks_size(), 2);
  streams_.OnBatch(1, MakeBatch(1, 3), /*refused=*/false, 100, kCreated + 1);
  const v1::JobStatus status = Status(0, 2);
  ASSERT_EQ(status.ranks_size(), 2);
  EXPECT_EQ(status.ranks(0).events_received(), 0u);
  EXPECT_EQ(status.ranks(1).events_received(), 3u);
  EXPECT_EQ(status.summary().events_received(), 3u);
  EXPECT_EQ(status.feed_sequence(), 2u);
}

TEST_F(JobStatusBuilderTest, CommandsSetTheStateAndAreListed) {
  streams_.Open(MakeHello("j", 0, 1, 10), std::make_shared<FakeAgentStream>(), "p0", 0, kCreated);
  Run(JobCommand::Kind::kDisableRecording);
  EXPECT_FALSE(status_.Summary(0).recording());
  Run(JobCommand::Kind::kHalt);
  const v1::JobStatus status = Status(0, 0);
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_HALTED);
  ASSERT_EQ(status.commands_size(), 2);
  EXPECT_EQ(status.commands(1).command(), "halt");
}

TEST_F(JobStatusBuilderTest, ARecoveredJobShowsWhatWasLostPerRank) {
  streams_.Open(MakeHello("j", 0, 2, 10), std::make_shared<FakeAgentStream>(), "p0", 0, kCreated);
  streams_.Open(MakeHello("j", 1, 2, 11), std::make_shared<FakeAgentStream>(), "p1", 0, kCreated);
  v1::LogRecovery recovery;
  recovery.set_events_lost(40);
  status_.SetRecovery(recovery, {{1, 40}});
  const v1::JobStatus status = Status(0, 0);
  ASSERT_TRUE(status.has_recovery());
  EXPECT_EQ(status.recovery().events_lost(), 40u);
  ASSERT_EQ(status.ranks_size(), 2);
  EXPECT_EQ(status.ranks(0).events_lost(), 0u);
  EXPECT_EQ(status.ranks(1).events_lost(), 40u);
}

TEST_F(JobStatusBuilderTest, TheAnalysisMemoryShowsWithItsNameBudget) {
  AnalysisWorker analysis({}, JobAnalyzerOptions{}, JobAnalyzerOutputs{});
  status_.SetAnalysis(&analysis);
  const v1::JobStatus status = Status(0, 0);
  ASSERT_TRUE(status.has_analysis_memory());
  EXPECT_EQ(status.analysis_memory().name_budget(), 1234u);
  EXPECT_FALSE(status.analysis_memory().released());
  analysis.Stop();
}

}  // namespace
}  // namespace trainscope::collector

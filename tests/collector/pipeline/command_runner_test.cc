#include "trainscope/collector/pipeline/command_runner.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;
using testing::ScopedTempDir;

class CommandRunnerTest : public ::testing::Test {
 protected:
  CommandRunnerTest() : tokens_("j", dir_.path(), JobToken{"secret", false}),
                        runner_("j", {.steps = 2, .lead_ns = 1'000'000'000}, &tokens_) {}
  ScopedTempDir dir_;
  JobTokenKeeper tokens_;
  CommandRunner runner_;
};

TEST_F(CommandRunnerTest, AuthorizesWithTheJobsToken) {
  JobCommand command;
  command.token = "secret";
  EXPECT_TRUE(runner_.Authorize(command).ok());
  command.token = "guess";
  EXPECT_EQ(runner_.Authorize(command).code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(CommandRunnerTest, AHaltStopsEveryRankAMarginPastTheFurthest) {
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.reason = "too slow";
  CommandRunner::Prepared p = runner_.Prepare(
      halt, {.any_step = true, .highest_step = 40, .reachable_ranks = 3, .now_unix_ns = 7});
  EXPECT_EQ(p.record.command(), "halt");
  EXPECT_EQ(p.record.halt_id(), 1u);
  EXPECT_EQ(p.record.halt_at_step(), 42u);
  EXPECT_EQ(p.record.ranks_reached(), 3u);
  EXPECT_EQ(p.control.halt().halt_at_step(), 42u);
  EXPECT_TRUE(runner_.halted());
  // Ranks that connect later get it only once it is durable.
  EXPECT_FALSE(runner_.halt_for_late_joiners().has_value());
  runner_.Commit(p);
  ASSERT_TRUE(runner_.halt_for_late_joiners().has_value());
  EXPECT_EQ(runner_.halt_for_late_joiners()->halt_id(), 1u);
  EXPECT_THAT(runner_.Reply(p, 3, 4).message(),
              "halt sent to 3 connected ranks of job j (world size 4); halting at step 42");

  CommandRunner::Prepared early = runner_.Prepare(halt, {.any_step = false});
  EXPECT_EQ(early.record.halt_id(), 2u);
  EXPECT_THAT(runner_.Reply(early, 1, 1).message(),
              HasSubstr("1 connected rank of job j (world size 1); halting at the next step "
                        "boundary (no step reported yet)"));
}

TEST_F(CommandRunnerTest, AHaltOfAFinishedOrHaltedJobIsRefusedNamingTheJobAndItsState) {
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  EXPECT_TRUE(runner_.Admit(halt, v1::JOB_STATE_RUNNING).ok());
  EXPECT_TRUE(runner_.Admit(halt, v1::JOB_STATE_IDLE).ok());  // stops ranks that come later
  const absl::Status finished = runner_.Admit(halt, v1::JOB_STATE_FINISHED);
  EXPECT_EQ(finished.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(finished.message(), HasSubstr("job j is finished"));
  EXPECT_THAT(finished.message(), HasSubstr("no rank left to halt"));
  // The other commands still apply to a finished job (its log, its record).
  JobCommand enable;
  enable.kind = JobCommand::Kind::kEnableRecording;
  EXPECT_TRUE(runner_.Admit(enable, v1::JOB_STATE_FINISHED).ok());

  halt.reason = "loss diverged";
  halt.requested_by = "alice";
  CommandRunner::Prepared p =
      runner_.Prepare(halt, {.any_step = true, .highest_step = 40, .reachable_ranks = 2});
  // Prepared but not yet durable: a second halt is refused already.
  EXPECT_EQ(runner_.Admit(halt, v1::JOB_STATE_RUNNING).code(),
            absl::StatusCode::kFailedPrecondition);
  runner_.Commit(p);
  const absl::Status again = runner_.Admit(halt, v1::JOB_STATE_HALTED);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.message(),
            "job j is already halted: halt 1 by alice at step 42 (loss diverged) was sent; its "
            "ranks stop there");
  EXPECT_TRUE(runner_.Admit(enable, v1::JOB_STATE_HALTED).ok());
}

TEST_F(CommandRunnerTest, AHaltFromTheJobLevelKeepsItsBoundary) {
  // A node collector sees only its own ranks: it must stop them where the
  // job-level collector said, even below or above its own furthest step.
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.halt_at_step = 57;
  CommandRunner::Prepared p = runner_.Prepare(halt, {.any_step = true, .highest_step = 40});
  EXPECT_EQ(p.record.halt_at_step(), 57u);
  EXPECT_EQ(p.control.halt().halt_at_step(), 57u);
  halt.halt_at_step = 3;
  EXPECT_EQ(runner_.Prepare(halt, {.any_step = true, .highest_step = 40})
                .control.halt()
                .halt_at_step(),
            3u);
}

TEST_F(CommandRunnerTest, AHaltOfAJobWithShortStepsLeadsByTheLeadTime) {
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  // 1 s of 30 ms steps: 34 steps (rounded up), more than the 2-step minimum.
  CommandRunner::Prepared fast =
      runner_.Prepare(halt, {.any_step = true, .highest_step = 40, .step_ns = 30'000'000});
  EXPECT_EQ(fast.record.halt_margin_steps(), 34u);
  EXPECT_EQ(fast.control.halt().halt_at_step(), 74u);
  // Steps longer than the lead: the minimum margin.
  CommandRunner::Prepared slow =
      runner_.Prepare(halt, {.any_step = true, .highest_step = 40, .step_ns = 3'000'000'000});
  EXPECT_EQ(slow.record.halt_margin_steps(), 2u);
  // Absurdly short steps are capped.
  CommandRunner::Prepared tiny =
      runner_.Prepare(halt, {.any_step = true, .highest_step = 40, .step_ns = 1});
  EXPECT_EQ(tiny.record.halt_margin_steps(), 10'000u);
}

TEST_F(CommandRunnerTest, RecordingAndLossContributionCommandsSetTheJobsState) {
  EXPECT_FALSE(runner_.recording().has_value());
  JobCommand disable;
  disable.kind = JobCommand::Kind::kDisableRecording;
  disable.sampling_period = 5;
  CommandRunner::Prepared p = runner_.Prepare(disable, {});
  EXPECT_FALSE(p.control.set_recording().enabled());
  EXPECT_EQ(runner_.recording(), false);
  EXPECT_EQ(runner_.sampling_period(), 5u);
  JobCommand loss;
  loss.kind = JobCommand::Kind::kEnableLossContribution;
  runner_.Prepare(loss, {});
  EXPECT_EQ(runner_.loss_contribution(), true);
  EXPECT_EQ(runner_.commands().size(), 2u);
}

TEST_F(CommandRunnerTest, APolicySendsNothingAndIsDescribed) {
  JobCommand policy;
  policy.kind = JobCommand::Kind::kSetHaltPolicy;
  policy.halt_policy.add_halt_when("straggler");
  policy.halt_policy.set_for_steps(5);
  policy.halt_policy.set_enabled(true);
  CommandRunner::Prepared p = runner_.Prepare(policy, {});
  EXPECT_EQ(p.control.body_case(), v1::Control::BODY_NOT_SET);
  EXPECT_THAT(p.record.reason(), HasSubstr("straggler"));
  EXPECT_THAT(runner_.Reply(p, 2, 2).message(), HasSubstr("job j: "));
}

TEST_F(CommandRunnerTest, RecoversTheStateItsCommandsSet) {
  v1::CommandRecord halt;
  halt.set_command("halt");
  halt.set_halt_id(4);
  halt.set_halt_at_step(12);
  v1::CommandRecord disable;
  disable.set_command("disable");
  v1::CommandRecord policy;
  policy.set_command("policy");
  policy.mutable_halt_policy()->set_enabled(true);
  std::optional<v1::HaltPolicy> recovered = runner_.Recover({halt, disable, policy});
  ASSERT_TRUE(recovered.has_value());
  EXPECT_TRUE(recovered->enabled());
  EXPECT_TRUE(runner_.halted());
  EXPECT_EQ(runner_.halt_for_late_joiners()->halt_at_step(), 12u);
  EXPECT_EQ(runner_.recording(), false);
  JobCommand again;
  again.kind = JobCommand::Kind::kHalt;
  EXPECT_EQ(runner_.Prepare(again, {}).record.halt_id(), 5u);  // ids go on
}

}  // namespace
}  // namespace trainscope::collector

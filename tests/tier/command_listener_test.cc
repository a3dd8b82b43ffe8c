#include "trainscope/tier/command_listener.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::tier {
namespace {

using ::testing::HasSubstr;

TEST(LocalCommandTest, AHaltKeepsTheJobWideBoundaryAndWhoAskedForIt) {
  v1::TierCommand command;
  command.set_kind(v1::TierCommand::KIND_HALT);
  command.set_issued_by("jl-0");
  command.mutable_halt()->set_halt_at_step(120);
  command.mutable_halt()->set_reason("loss diverged");
  command.mutable_halt()->set_requested_by("alice");
  absl::StatusOr<collector::JobCommand> local = LocalCommand(command);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->kind, collector::JobCommand::Kind::kHalt);
  EXPECT_EQ(local->halt_at_step, 120u);
  EXPECT_EQ(local->reason, "loss diverged");
  EXPECT_THAT(local->requested_by, HasSubstr("alice"));
  EXPECT_THAT(local->requested_by, HasSubstr("jl-0"));
}

TEST(LocalCommandTest, RecordingAndLossSwitchesMapOneToOne) {
  v1::TierCommand command;
  command.set_kind(v1::TierCommand::KIND_ENABLE_RECORDING);
  command.set_sampling_period(4);
  absl::StatusOr<collector::JobCommand> local = LocalCommand(command);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->kind, collector::JobCommand::Kind::kEnableRecording);
  EXPECT_EQ(local->sampling_period, 4u);
  command.set_kind(v1::TierCommand::KIND_DISABLE_LOSS_CONTRIBUTION);
  EXPECT_EQ(LocalCommand(command)->kind, collector::JobCommand::Kind::kDisableLossContribution);
}

TEST(LocalCommandTest, AnUnknownKindIsRefusedNamingTheField) {
  v1::TierCommand command;
  absl::StatusOr<collector::JobCommand> local = LocalCommand(command);
  EXPECT_EQ(local.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(local.status().message(), HasSubstr("TierCommand.kind"));
}

}  // namespace
}  // namespace trainscope::tier

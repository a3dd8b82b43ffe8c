#include "trainscope/collector/pipeline/alert_stage.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr int64_t kNow = 1'700'000'000'000'000'000;

AlertStage::Options Enabled(std::vector<std::string>* notices) {
  return {.enabled = true,
          .rules = WithDefaults(v1::RulesConfig()),
          .max_alerts_kept = 100,
          .notice = [notices](absl::string_view line) { notices->emplace_back(line); }};
}

// A step whose devices compute `efficiency` of their step time.
v1::StepReport Step(uint64_t number, double efficiency) {
  v1::StepReport step;
  step.set_step(number);
  for (uint32_t rank = 0; rank < 2; ++rank) {
    v1::DeviceStep* d = step.add_devices();
    d->set_step(number);
    d->set_rank(rank);
    d->set_complete(true);
    d->set_step_time_ns(100'000'000);
    d->set_compute_ns(static_cast<int64_t>(efficiency * 100'000'000));
  }
  return step;
}

v1::HaltPolicy BelowEfficiency(double below, uint32_t for_steps) {
  v1::HaltPolicy policy;
  policy.set_enabled(true);
  policy.set_below_efficiency(below);
  policy.set_for_steps(for_steps);
  return policy;
}

TEST(AlertStageTest, RecordsWhatTheEngineRaisesAndClearsForQueries) {
  std::vector<std::string> notices;
  AlertStage stage("j", Enabled(&notices));
  std::vector<v1::Alert> lost = stage.OnDeviceLost(3, 41, kNow);
  ASSERT_THAT(lost, SizeIs(1));
  EXPECT_EQ(lost[0].rule(), "lost_device");
  EXPECT_EQ(stage.open_alerts(), 1u);
  std::vector<v1::Alert> back = stage.OnDeviceBack(3, 41, kNow + 1);
  ASSERT_THAT(back, SizeIs(1));
  EXPECT_EQ(back[0].state(), v1::ALERT_STATE_CLEARED);
  EXPECT_EQ(stage.open_alerts(), 0u);
  EXPECT_THAT(stage.Select(v1::AlertQuery()), SizeIs(2));  // the raise and the clear
}

TEST(AlertStageTest, KeepsOnlyTheNewestRows) {
  std::vector<std::string> notices;
  AlertStage::Options options = Enabled(&notices);
  options.max_alerts_kept = 1;
  AlertStage stage("j", options);
  stage.OnDeviceLost(3, 41, kNow);
  stage.OnDeviceBack(3, 41, kNow + 1);
  const std::vector<v1::Alert> kept = stage.Select(v1::AlertQuery());
  ASSERT_THAT(kept, SizeIs(1));
  EXPECT_EQ(kept[0].state(), v1::ALERT_STATE_CLEARED);
}

TEST(AlertStageTest, HaltsWhenThePolicyHoldsForItsSteps) {
  std::vector<std::string> notices;
  AlertStage stage("j", Enabled(&notices));
  ASSERT_TRUE(stage.ApplyHaltPolicy(BelowEfficiency(0.5, 3), "a test").ok());
  ASSERT_THAT(notices, SizeIs(1));
  EXPECT_THAT(notices[0], HasSubstr("(from a test)"));
  EXPECT_FALSE(stage.OnStep(Step(1, 0.1), kNow, false).halt.has_value());
  EXPECT_FALSE(stage.OnStep(Step(2, 0.1), kNow, false).halt.has_value());
  const AlertStage::StepOutcome third = stage.OnStep(Step(3, 0.1), kNow, false);
  ASSERT_TRUE(third.halt.has_value());
  EXPECT_EQ(third.halt->rule, "efficiency");
  // A halted job is not halted again.
  EXPECT_FALSE(stage.OnStep(Step(4, 0.1), kNow, /*halted=*/true).halt.has_value());
}

TEST(AlertStageTest, APolicyTheJobSetWinsOverTheFlags) {
  std::vector<std::string> notices;
  AlertStage stage("j", Enabled(&notices));
  stage.Start(BelowEfficiency(0.2, 7), /*flags=*/BelowEfficiency(0.9, 2));
  EXPECT_TRUE(stage.policy_from_job());
  EXPECT_EQ(stage.halt_policy().for_steps(), 7u);
  ASSERT_THAT(notices, SizeIs(1));
  EXPECT_THAT(notices[0], HasSubstr("the job's log"));

  std::vector<std::string> flag_notices;
  AlertStage flags_only("k", Enabled(&flag_notices));
  flags_only.Start(std::nullopt, BelowEfficiency(0.9, 2));
  EXPECT_FALSE(flags_only.policy_from_job());
  EXPECT_EQ(flags_only.halt_policy().for_steps(), 2u);
}

TEST(AlertStageTest, WithoutAnalysisNothingIsRaisedAndPoliciesAreRefused) {
  AlertStage stage("j", {.enabled = false});
  EXPECT_FALSE(stage.enabled());
  EXPECT_THAT(stage.OnDeviceLost(3, 41, kNow), IsEmpty());
  EXPECT_THAT(stage.OnStep(Step(1, 0.1), kNow, false).alerts, IsEmpty());
  const absl::Status refused = stage.ApplyHaltPolicy(BelowEfficiency(0.5, 3), "a test");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("--analysis=false"));
  EXPECT_TRUE(stage.ApplyHaltPolicy(v1::HaltPolicy(), "off").ok());  // turning it off is fine
}

TEST(AlertStageTest, AnUnknownRuleInAPolicyIsRefused) {
  std::vector<std::string> notices;
  AlertStage stage("j", Enabled(&notices));
  v1::HaltPolicy policy;
  policy.set_enabled(true);
  policy.add_halt_when("no_such_rule");
  policy.set_for_steps(1);
  EXPECT_EQ(stage.ApplyHaltPolicy(policy, "a test").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trainscope::collector

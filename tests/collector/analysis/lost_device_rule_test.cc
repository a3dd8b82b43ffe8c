#include "trainscope/collector/analysis/lost_device_rule.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

// A closed step with ranks 0..3 but those in `missing`.
v1::StepReport Step(uint64_t step, const std::vector<uint32_t>& missing) {
  v1::StepReport report;
  report.set_step(step);
  for (uint32_t r = 0; r < 4; ++r) {
    if (std::find(missing.begin(), missing.end(), r) != missing.end()) {
      report.add_missing_ranks(r);
      continue;
    }
    v1::DeviceStep* d = report.add_devices();
    d->set_rank(r);
    d->set_complete(true);
  }
  return report;
}

v1::LostDeviceRule Rule() { return WithDefaults(v1::RulesConfig()).lost_device(); }

TEST(LostDeviceRuleTest, MissingStepsRunningRaiseOnceAndReportingClears) {
  LostDeviceRule rule(Rule());
  const uint32_t missing_steps = Rule().missing_steps();
  std::vector<LostDeviceRule::Change> changes;
  for (uint64_t s = 10; s < 10 + missing_steps - 1; ++s) {
    EXPECT_TRUE(rule.OnStep(Step(s, {1})).empty());
  }
  changes = rule.OnStep(Step(10 + missing_steps - 1, {1}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].lost);
  EXPECT_EQ(changes[0].rank, 1u);
  EXPECT_EQ(changes[0].onset_step, 10u);
  EXPECT_EQ(changes[0].alert.rule(), "lost_device");
  EXPECT_EQ(changes[0].alert.cause_rank(), 1);
  EXPECT_EQ(changes[0].message,
            absl::StrFormat("rank 1 is lost: it reported none of the last %u closed steps since "
                            "step 10",
                            missing_steps));
  EXPECT_TRUE(rule.any_lost());
  EXPECT_TRUE(rule.OnStep(Step(50, {1})).empty()) << "raised once";

  changes = rule.OnStep(Step(51, {}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].lost);
  EXPECT_EQ(changes[0].message, "rank 1 reports steps again");
  EXPECT_FALSE(rule.any_lost());
}

TEST(LostDeviceRuleTest, AClosedStreamRaisesAtOnceAndItsOwnStepsDoNotClear) {
  LostDeviceRule rule(Rule());
  std::optional<LostDeviceRule::Change> raised = rule.OnStreamLost(2, 40);
  ASSERT_TRUE(raised.has_value());
  EXPECT_TRUE(raised->lost);
  EXPECT_EQ(raised->alert.metric(), "stream");
  EXPECT_EQ(raised->message, "rank 2 is lost: its stream closed without goodbye after step 40");
  EXPECT_FALSE(rule.OnStreamLost(2, 41).has_value()) << "already raised";
  // The assembler lags the streams: step 40 may still close with rank 2.
  EXPECT_TRUE(rule.OnStep(Step(40, {})).empty());
  std::vector<LostDeviceRule::Change> changes = rule.OnStep(Step(41, {}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].lost);
}

TEST(LostDeviceRuleTest, ADeviceBackClearsIt) {
  LostDeviceRule rule(Rule());
  ASSERT_TRUE(rule.OnStreamLost(3, 7).has_value());
  std::optional<LostDeviceRule::Change> back = rule.OnDeviceBack(3, 9);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->message, "rank 3 is back");
  EXPECT_EQ(back->step, 9u);
  EXPECT_FALSE(rule.OnDeviceBack(3, 10).has_value());
}

TEST(LostDeviceRuleTest, DisabledRaisesNothing) {
  v1::LostDeviceRule config = Rule();
  config.set_enabled(false);
  LostDeviceRule rule(config);
  EXPECT_FALSE(rule.OnStreamLost(1, 5).has_value());
  for (uint64_t s = 1; s < 20; ++s) EXPECT_TRUE(rule.OnStep(Step(s, {1})).empty());
  EXPECT_FALSE(rule.any_lost());
}

}  // namespace
}  // namespace trainscope::collector

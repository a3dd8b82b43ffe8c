#include "trainscope/collector/analysis/hold_up_detector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

using testing::kMs;

// Three ranks with 100 ms steps; ranks 0 and 1 wait `wait_ns` for rank 2.
v1::StepReport Step(uint64_t step, int64_t wait_ns) {
  v1::StepReport report;
  report.set_step(step);
  for (uint32_t r = 0; r < 3; ++r) {
    v1::DeviceStep* d = report.add_devices();
    d->set_step(step);
    d->set_rank(r);
    d->set_complete(true);
    d->set_step_time_ns(100 * kMs);
    d->set_wait_ns(r == 2 ? 0 : wait_ns);
    d->set_waited_for_rank(r == 2 ? -1 : 2);
  }
  return report;
}

// Defaults: min_wait_fraction 0.35 over streak_steps 3; sustained 0.12 over 20.
v1::RulesConfig Rules() {
  v1::RulesConfig rules;
  rules.set_warmup_steps(0);
  return WithDefaults(rules);
}

TEST(HoldUpDetectorTest, TheFastTestNeedsAStreakOverTheThreshold) {
  const v1::RulesConfig rules = Rules();
  RuleHistory history(rules);
  HoldUpDetector detector(rules);
  history.OnStep(Step(1, 40 * kMs));
  history.OnStep(Step(2, 40 * kMs));
  HoldUpDetector::HoldUp held = detector.Detect(2, history);
  EXPECT_FALSE(held.holds);
  EXPECT_TRUE(held.present) << "well over half the sustained threshold";
  EXPECT_DOUBLE_EQ(held.threshold, 0.35);
  history.OnStep(Step(3, 40 * kMs));
  held = detector.Detect(2, history);
  EXPECT_TRUE(held.holds);
  EXPECT_EQ(held.window, 3u);
  EXPECT_DOUBLE_EQ(held.fraction, 0.4);
  EXPECT_EQ(held.onset, 1u);
  EXPECT_TRUE(held.late_arrival_evidence.empty());
}

TEST(HoldUpDetectorTest, TheSustainedTestJudgesTheLongWindow) {
  const v1::RulesConfig rules = Rules();
  RuleHistory history(rules);
  HoldUpDetector detector(rules);
  for (uint64_t s = 1; s <= 19; ++s) history.OnStep(Step(s, 20 * kMs));
  EXPECT_FALSE(detector.Detect(2, history).holds);
  history.OnStep(Step(20, 20 * kMs));
  const HoldUpDetector::HoldUp held = detector.Detect(2, history);
  EXPECT_TRUE(held.holds);
  EXPECT_EQ(held.window, 20u);
  EXPECT_DOUBLE_EQ(held.threshold, 0.12);
  EXPECT_DOUBLE_EQ(held.fraction, 0.2);
}

TEST(HoldUpDetectorTest, ADeviceNobodyWaitsForHoldsNobodyUp) {
  const v1::RulesConfig rules = Rules();
  RuleHistory history(rules);
  HoldUpDetector detector(rules);
  for (uint64_t s = 1; s <= 25; ++s) history.OnStep(Step(s, 40 * kMs));
  const HoldUpDetector::HoldUp held = detector.Detect(0, history);
  EXPECT_FALSE(held.holds);
  EXPECT_FALSE(held.present);
  EXPECT_DOUBLE_EQ(held.fraction, 0);
  EXPECT_EQ(held.window, 5u);  // the recent median's
}

TEST(HoldUpDetectorTest, TheLateArrivalTestNamesASlightlySlowDevice) {
  // 8 % slower: within its peers' noise in any one step, last again and again.
  testing::SyntheticJob job(8, 1, 23);
  job.slow_rank = 5;
  job.slow_factor = 1.08;
  job.slow = {60, 1000};
  const v1::RulesConfig rules = WithDefaults(v1::RulesConfig());
  RuleHistory history(rules);
  HoldUpDetector detector(rules);
  for (uint64_t s = 1; s <= 120; ++s) history.OnStep(job.Step(s));
  const HoldUpDetector::HoldUp held = detector.Detect(5, history);
  EXPECT_TRUE(held.holds);
  EXPECT_THAT(held.late_arrival_evidence, ::testing::HasSubstr("last to arrive in"));
  EXPECT_FALSE(detector.Detect(2, history).holds);
}

}  // namespace
}  // namespace trainscope::collector

// step_time_regression (step_time_regression_rule.cc).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::kMs;
using testing::RunRule;
using testing::SyntheticJob;

TEST(StepTimeRegressionRuleTest, JudgesTheJobAgainstItsEarlyBaseline) {
  SyntheticJob job(4, 1, 17);
  job.stall_rank = -2;  // every rank waits 40 ms more for data: 48 ms steps grow to 88 ms
  job.stall_ns = 40 * kMs;
  job.stall = {80, 1000};
  auto verdicts = RunRule(job, &MakeStepTimeRegressionRule, {}, 100);
  for (uint64_t s = 6; s < 80; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[100]), ::testing::ElementsAre("job"));
  const RuleVerdict& v = verdicts[100][0];
  EXPECT_EQ(v.what, "the job's step time regressed");
  EXPECT_THAT(v.values, ::testing::HasSubstr(" vs baseline "));
  EXPECT_GE(*v.onset_step, 80u);
}

TEST(StepTimeRegressionRuleTest, NoVerdictWhileTheBaselineIsCollected) {
  SyntheticJob job(4, 1, 17);
  v1::RulesConfig rules;
  rules.mutable_step_time_regression()->set_warmup_steps(10);
  rules.mutable_step_time_regression()->set_baseline_steps(20);
  auto verdicts = RunRule(job, &MakeStepTimeRegressionRule, rules, 31);
  for (uint64_t s = 6; s <= 30; ++s) EXPECT_TRUE(verdicts[s].empty()) << "step " << s;
  EXPECT_EQ(verdicts[31].size(), 1u);
}

}  // namespace
}  // namespace trainscope::collector

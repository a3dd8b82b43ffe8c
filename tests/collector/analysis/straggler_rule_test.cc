// straggler (straggler_rule.cc).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::RunRule;
using testing::SyntheticJob;

TEST(StragglerRuleTest, NamesTheSlowDeviceNotItsVictims) {
  SyntheticJob job(4, 1, 7);
  job.slow_rank = 2;
  job.slow_factor = 3;
  job.slow = {60, 1000};
  auto verdicts = RunRule(job, &MakeStragglerRule, {}, 80);
  for (uint64_t s = 6; s < 60; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[80]), ::testing::ElementsAre("rank 0000000002"));
  for (const RuleVerdict& v : verdicts[80]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "rank 2 is a straggler");
    EXPECT_THAT(v.values, ::testing::StartsWith("own time (step minus waits)"));
    EXPECT_THAT(v.alert.victim_ranks(), ::testing::ElementsAre(0u, 1u, 3u));
    EXPECT_EQ(v.alert.metric(), "own_ns");
  }
}

TEST(StragglerRuleTest, JudgesNothingInItsWarmup) {
  SyntheticJob job(4, 1, 7);
  job.slow_rank = 2;
  job.slow_factor = 3;
  job.slow = {1, 1000};
  v1::RulesConfig rules;
  rules.mutable_straggler()->set_warmup_steps(40);
  auto verdicts = RunRule(job, &MakeStragglerRule, rules, 50);
  for (uint64_t s = 6; s <= 40; ++s) EXPECT_TRUE(verdicts[s].empty()) << "step " << s;
  EXPECT_FALSE(Holding(verdicts[50]).empty());
}

}  // namespace
}  // namespace trainscope::collector

// collective_wait (collective_wait_rule.cc).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::RunRule;
using testing::SyntheticJob;

TEST(CollectiveWaitRuleTest, BlamesTheDeviceEveryoneWaitsFor) {
  SyntheticJob job(4, 1, 7);
  job.slow_rank = 2;
  job.slow_factor = 3;
  job.slow = {60, 1000};
  auto verdicts = RunRule(job, &MakeCollectiveWaitRule, {}, 70);
  for (uint64_t s = 6; s < 60; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[70]), ::testing::ElementsAre("rank 0000000002"));
  for (const RuleVerdict& v : verdicts[70]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "ranks 0,1,3 wait for rank 2 in collectives");
    EXPECT_THAT(v.values, ::testing::StartsWith("a median "));
    EXPECT_EQ(v.alert.cause_rank(), 2);
    EXPECT_EQ(v.alert.metric(), "wait_fraction");
  }
}

TEST(CollectiveWaitRuleTest, ACleanJobHoldsNobodyUp) {
  SyntheticJob job(4, 1, 3);
  auto verdicts = RunRule(job, &MakeCollectiveWaitRule, {}, 200);
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(Holding(v).empty()) << "step " << step;
}

}  // namespace
}  // namespace trainscope::collector

// stage_flops_imbalance (stage_flops_imbalance_rule.cc).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::RunRule;
using testing::SyntheticJob;

TEST(StageFlopsImbalanceRuleTest, NamesTheStageCarryingMoreFlops) {
  SyntheticJob job(4, 2, 9);
  job.heavy_stage = 1;
  job.heavy_factor = 3;
  job.imbalance = {50, 1000};
  auto verdicts = RunRule(job, &MakeStageFlopsImbalanceRule, {}, 80);
  for (uint64_t s = 6; s < 50; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[80]), ::testing::ElementsAre("stage 0000000001"));
  for (const RuleVerdict& v : verdicts[80]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "stage 1 (ranks 2,3) carries too many FLOPs");
    EXPECT_THAT(v.values, ::testing::HasSubstr("(50% above)"));
    EXPECT_EQ(v.alert.stage(), 1);
  }
}

TEST(StageFlopsImbalanceRuleTest, OneStageHasNothingToCompare) {
  SyntheticJob job(4, 1, 9);
  auto verdicts = RunRule(job, &MakeStageFlopsImbalanceRule, {}, 40);
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(v.empty()) << "step " << step;
}

}  // namespace
}  // namespace trainscope::collector

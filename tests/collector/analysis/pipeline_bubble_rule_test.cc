// pipeline_bubble (pipeline_bubble_rule.cc).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::RunRule;
using testing::SyntheticJob;

TEST(PipelineBubbleRuleTest, NamesTheOverloadedStageNotItsVictimsBubbles) {
  SyntheticJob job(4, 2, 9);
  job.heavy_stage = 1;
  job.heavy_factor = 3;
  job.imbalance = {50, 1000};
  auto verdicts = RunRule(job, &MakePipelineBubbleRule, {}, 70);
  for (uint64_t s = 6; s < 50; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[70]), ::testing::ElementsAre("stage 0000000001"));
  for (const RuleVerdict& v : verdicts[70]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "stage 1 (ranks 2,3) is overloaded and stalls the pipeline");
    EXPECT_THAT(v.values, ::testing::StartsWith("compute median "));
    EXPECT_THAT(v.alert.victim_ranks(), ::testing::ElementsAre(0u, 1u));
    EXPECT_EQ(v.alert.metric(), "compute_ns");
  }
}

TEST(PipelineBubbleRuleTest, ABalancedPipelineIdlesLittle) {
  SyntheticJob job(4, 2, 4);
  auto verdicts = RunRule(job, &MakePipelineBubbleRule, {}, 120);
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(Holding(v).empty()) << "step " << step;
  EXPECT_EQ(verdicts[120].size(), 2u) << "one verdict per stage";
  EXPECT_EQ(verdicts[120][0].alert.metric(), "bubble_ns");
}

}  // namespace
}  // namespace trainscope::collector

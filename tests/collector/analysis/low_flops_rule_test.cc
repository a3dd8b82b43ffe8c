// low_flops (low_flops_rule.cc), run on a RuleHistory as the engine does.
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::RunRule;
using testing::SyntheticJob;

TEST(LowFlopsRuleTest, NamesTheDeviceBelowItsPeers) {
  SyntheticJob job(4, 1, 7);
  auto verdicts = RunRule(job, &MakeLowFlopsRule, {}, 120, [](v1::StepReport* report) {
    if (report->step() < 60) return;
    for (v1::DeviceStep& d : *report->mutable_devices()) {
      if (d.rank() == 2) d.set_flops_per_second(d.flops_per_second() / 3);
    }
  });
  for (uint64_t s = 6; s < 60; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[120]), ::testing::ElementsAre("rank 0000000002"));
  for (const RuleVerdict& v : verdicts[120]) {
    if (v.subject != "rank 0000000002") continue;
    EXPECT_EQ(v.what, "rank 2 achieves low FLOPS");
    EXPECT_THAT(v.values, ::testing::HasSubstr("% below)"));
    EXPECT_EQ(v.alert.metric(), "flops_per_second");
    EXPECT_GE(*v.onset_step, 60u);
  }
}

TEST(LowFlopsRuleTest, DisabledIsNotMade) {
  v1::RulesConfig rules;
  rules.mutable_low_flops()->set_enabled(false);
  SyntheticJob job(4, 1, 7);
  EXPECT_TRUE(RunRule(job, &MakeLowFlopsRule, rules, 10).empty());
}

}  // namespace
}  // namespace trainscope::collector

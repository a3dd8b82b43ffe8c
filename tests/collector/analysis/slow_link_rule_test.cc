// slow_link (slow_link_rule.cc).
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

TEST(SlowLinkRuleTest, NamesTheSlowLinkAmongSimilarOnes) {
  SyntheticJob job(4, 1, 11);
  job.link_src = 1;
  job.link_dst = 2;
  job.link_extra_ns = 5 * kMs;
  job.slow_link = {50, 1000};
  v1::RulesConfig rules;
  rules.mutable_slow_link()->set_collective_links(true);
  auto verdicts = RunRule(job, &MakeSlowLinkRule, rules, 70);
  for (uint64_t s = 6; s < 50; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[70]), ::testing::ElementsAre("collective 0000000001 0000000002"));
  for (const RuleVerdict& v : verdicts[70]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "link 1->2 (collective) is slow");
    EXPECT_THAT(v.values, ::testing::HasSubstr("similar collective links"));
    EXPECT_EQ(v.alert.link_src_rank(), 1);
    EXPECT_EQ(v.alert.link_dst_rank(), 2);
  }
}

TEST(SlowLinkRuleTest, CollectiveLinksAreNotJudgedByDefault) {
  SyntheticJob job(4, 1, 11);
  job.link_src = 1;
  job.link_dst = 2;
  job.link_extra_ns = 5 * kMs;
  job.slow_link = {10, 1000};
  auto verdicts = RunRule(job, &MakeSlowLinkRule, {}, 40);
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(v.empty()) << "step " << step;
}

}  // namespace
}  // namespace trainscope::collector

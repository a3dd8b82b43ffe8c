// loader_stall (loader_stall_rule.cc).
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

TEST(LoaderStallRuleTest, NamesTheStalledDevice) {
  SyntheticJob job(4, 1, 3);
  job.stall_rank = 3;
  job.stall_ns = 30 * kMs;
  job.stall = {50, 1000};
  auto verdicts = RunRule(job, &MakeLoaderStallRule, {}, 60);
  for (uint64_t s = 6; s < 50; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[60]), ::testing::ElementsAre("rank 0000000003"));
  for (const RuleVerdict& v : verdicts[60]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "rank 3 stalls on its data loader");
    EXPECT_THAT(v.values, ::testing::StartsWith("data wait median "));
    EXPECT_GE(*v.onset_step, 50u);
  }
}

TEST(LoaderStallRuleTest, EveryStalledDeviceIsItsOwnSubject) {
  SyntheticJob job(4, 1, 5);
  job.stall_rank = -2;  // every rank
  job.stall_ns = 30 * kMs;
  job.stall = {50, 1000};
  auto verdicts = RunRule(job, &MakeLoaderStallRule, {}, 60);
  EXPECT_EQ(Holding(verdicts[60]).size(), 4u);
}

}  // namespace
}  // namespace trainscope::collector

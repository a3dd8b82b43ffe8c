#include "trainscope/collector/analysis/halt_policy_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HaltPolicySpecTest, ParsesRulesAndSteps) {
  absl::StatusOr<v1::HaltPolicy> policy = ParseHaltPolicy(" straggler, slow_link ", 5, 0);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->enabled());
  EXPECT_THAT(policy->halt_when(), ElementsAre("straggler", "slow_link"));
  EXPECT_EQ(policy->for_steps(), 5u);
  EXPECT_EQ(DescribeHaltPolicy(*policy),
            "halt when straggler or slow_link holds for 5 consecutive steps");
}

TEST(HaltPolicySpecTest, EfficiencyAlone) {
  absl::StatusOr<v1::HaltPolicy> policy = ParseHaltPolicy("", 10, 0.4);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->enabled());
  EXPECT_EQ(DescribeHaltPolicy(*policy),
            "halt when efficiency is below 0.4 for 10 consecutive steps");
}

TEST(HaltPolicySpecTest, NothingGivenIsNoPolicy) {
  absl::StatusOr<v1::HaltPolicy> policy = ParseHaltPolicy("", 0, 0);
  ASSERT_TRUE(policy.ok());
  EXPECT_FALSE(policy->enabled());
  EXPECT_EQ(DescribeHaltPolicy(*policy), "no halt policy");
}

TEST(HaltPolicySpecTest, BadInputNamesTheFlagAndWhatWasExpected) {
  absl::StatusOr<v1::HaltPolicy> unknown = ParseHaltPolicy("stragler", 5, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("--halt-when: unknown rule 'stragler'"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("straggler"));  // the known names

  absl::StatusOr<v1::HaltPolicy> no_steps = ParseHaltPolicy("straggler", 0, 0);
  ASSERT_FALSE(no_steps.ok());
  EXPECT_THAT(no_steps.status().message(), HasSubstr("--for"));

  absl::StatusOr<v1::HaltPolicy> steps_alone = ParseHaltPolicy("", 3, 0);
  ASSERT_FALSE(steps_alone.ok());
  EXPECT_THAT(steps_alone.status().message(), HasSubstr("--halt-when"));

  EXPECT_FALSE(ParseHaltPolicy("", 5, 1.5).ok());
  EXPECT_FALSE(ParseHaltPolicy("", 5, -0.1).ok());
}

}  // namespace
}  // namespace trainscope::collector

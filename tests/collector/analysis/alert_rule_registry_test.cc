#include "trainscope/collector/analysis/alert_rule_registry.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

TEST(AlertRuleRegistryTest, StepRulesAreTheKnownRulesInOrder) {
  std::vector<std::string> expected;
  for (const std::string& name : KnownRuleNames()) {
    // Judged by the engine itself, not on each step's windows.
    if (name != kRuleLostDevice && name != kRuleDifficultItem) expected.push_back(name);
  }
  std::vector<std::string> registered;
  for (const AlertRuleRegistration& r : StepRuleRegistry()) registered.emplace_back(r.name);
  EXPECT_EQ(registered, expected);
}

TEST(AlertRuleRegistryTest, EachFactoryMakesTheRuleItIsRegisteredFor) {
  const v1::RulesConfig rules = WithDefaults(v1::RulesConfig());
  for (const AlertRuleRegistration& r : StepRuleRegistry()) {
    std::unique_ptr<AlertRule> rule = r.make(rules);
    ASSERT_NE(rule, nullptr) << r.name;
    EXPECT_EQ(rule->name(), r.name);
    EXPECT_GT(rule->hysteresis().raise_after_steps(), 0u) << r.name;
  }
}

TEST(AlertRuleRegistryTest, DisabledRulesAreNotMade) {
  v1::RulesConfig config;
  config.mutable_straggler()->set_enabled(false);
  config.mutable_slow_link()->set_enabled(false);
  config.mutable_copy_stall()->set_enabled(false);
  std::vector<std::string> made;
  for (const std::unique_ptr<AlertRule>& rule : MakeStepRules(WithDefaults(config))) {
    made.emplace_back(rule->name());
  }
  EXPECT_THAT(made,
              ::testing::ElementsAre("low_flops", "stage_flops_imbalance", "collective_wait",
                                     "pipeline_bubble", "loader_stall", "step_time_regression",
                                     "launch_bound", "slow_kernels"));
}

}  // namespace
}  // namespace trainscope::collector

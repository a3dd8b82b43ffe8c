#include "trainscope/collector/analysis/alert_rule_registry.h"

#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {

absl::Span<const AlertRuleRegistration> StepRuleRegistry() {
  static constexpr AlertRuleRegistration kRegistry[] = {
      {kRuleLowFlops, &MakeLowFlopsRule},
      {kRuleStageFlopsImbalance, &MakeStageFlopsImbalanceRule},
      {kRuleStraggler, &MakeStragglerRule},
      {kRuleCollectiveWait, &MakeCollectiveWaitRule},
      {kRuleSlowLink, &MakeSlowLinkRule},
      {kRulePipelineBubble, &MakePipelineBubbleRule},
      {kRuleLoaderStall, &MakeLoaderStallRule},
      {kRuleStepTimeRegression, &MakeStepTimeRegressionRule},
      {kRuleLaunchBound, &MakeLaunchBoundRule},
      {kRuleCopyStall, &MakeCopyStallRule},
      {kRuleSlowKernels, &MakeSlowKernelsRule},
  };
  return kRegistry;
}

std::vector<std::unique_ptr<AlertRule>> MakeStepRules(const v1::RulesConfig& rules) {
  std::vector<std::unique_ptr<AlertRule>> out;
  for (const AlertRuleRegistration& registration : StepRuleRegistry()) {
    std::unique_ptr<AlertRule> rule = registration.make(rules);
    if (rule != nullptr) out.push_back(std::move(rule));
  }
  return out;
}

}  // namespace trainscope::collector

// The built-in step rules, in the order the AlertEngine judges them (which
// is the order of their alerts within a step). Adding a rule: write
// src/analysis/<name>_rule.cc with its AlertRule and its factory, declare
// the factory here and add one line to the table in alert_rule_registry.cc.
//
// Not here: lost_device (judged on missing ranks and closed streams, without
// hysteresis) and difficult_item (judged on loss epochs), which the engine
// runs itself, and external findings.
//
// Usage:
//   for (std::unique_ptr<AlertRule>& rule : MakeStepRules(WithDefaults(config))) ...
//
// Threading: pure functions; safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_RULE_REGISTRY_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_RULE_REGISTRY_H_

#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "trainscope/collector/analysis/alert_rule.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

// A rule's factory: nullptr when `rules` (defaults filled) disables it.
using AlertRuleFactory = std::unique_ptr<AlertRule> (*)(const v1::RulesConfig& rules);

struct AlertRuleRegistration {
  absl::string_view name;  // Alert.rule, as in rules_config.h
  AlertRuleFactory make;
};

// Every built-in step rule, in evaluation order.
absl::Span<const AlertRuleRegistration> StepRuleRegistry();

// The enabled step rules of `rules` (defaults filled), in evaluation order.
std::vector<std::unique_ptr<AlertRule>> MakeStepRules(const v1::RulesConfig& rules);

// One factory per rule file.
std::unique_ptr<AlertRule> MakeLowFlopsRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeStageFlopsImbalanceRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeStragglerRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeCollectiveWaitRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeSlowLinkRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakePipelineBubbleRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeLoaderStallRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeStepTimeRegressionRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeLaunchBoundRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeCopyStallRule(const v1::RulesConfig& rules);
std::unique_ptr<AlertRule> MakeSlowKernelsRule(const v1::RulesConfig& rules);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_RULE_REGISTRY_H_

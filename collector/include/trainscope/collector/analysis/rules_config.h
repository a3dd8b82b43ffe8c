// The rules file of `trainscope-collector --rules FILE`: protobuf text format
// of v1::RulesConfig (proto/trainscope/v1/alerts.proto), validated, and the
// defaults that fill every field the file leaves unset.
//
// Usage:
//   absl::StatusOr<v1::RulesConfig> rules = LoadRulesFile(path);
//   if (!rules.ok()) return rules.status();   // "rules.txt:3:12: ..."
//   AlertEngine engine(job_id, *rules);       // applies WithDefaults itself
//   std::cout << DefaultRulesText();          // --print-default-rules
//
// Threading: free functions without shared state; safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_RULES_CONFIG_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_RULES_CONFIG_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

// Rule names as they appear in Alert.rule and `--halt-when`.
inline constexpr absl::string_view kRuleLowFlops = "low_flops";
inline constexpr absl::string_view kRuleStageFlopsImbalance = "stage_flops_imbalance";
inline constexpr absl::string_view kRuleStraggler = "straggler";
inline constexpr absl::string_view kRuleCollectiveWait = "collective_wait";
inline constexpr absl::string_view kRuleSlowLink = "slow_link";
inline constexpr absl::string_view kRulePipelineBubble = "pipeline_bubble";
inline constexpr absl::string_view kRuleLoaderStall = "loader_stall";
inline constexpr absl::string_view kRuleStepTimeRegression = "step_time_regression";
inline constexpr absl::string_view kRuleLostDevice = "lost_device";
inline constexpr absl::string_view kRuleDifficultItem = "difficult_item";
inline constexpr absl::string_view kRuleLaunchBound = "launch_bound";
inline constexpr absl::string_view kRuleCopyStall = "copy_stall";
inline constexpr absl::string_view kRuleSlowKernels = "slow_kernels";

// Parses and validates a rules file's text. Syntax errors name
// "line:column: what" (1-based); range errors name the field and what was
// expected ("straggler.window_steps: expected >= 2, got 1"). Unset fields stay
// unset (see WithDefaults).
absl::StatusOr<v1::RulesConfig> ParseRulesConfig(absl::string_view text);

// Reads and parses `path`: NOT_FOUND when it does not exist, INVALID_ARGUMENT
// (message prefixed with the path) when it does not parse or validate.
absl::StatusOr<v1::RulesConfig> LoadRulesFile(const std::filesystem::path& path);

// Fills every unset optional field with its default (the values documented in
// alerts.proto). A rule's unset hysteresis fields fall back to the top-level
// hysteresis, then to its defaults (raise 2, clear 3).
v1::RulesConfig WithDefaults(v1::RulesConfig config);

// The built-in rules, in evaluation order.
std::vector<std::string> KnownRuleNames();

// The default configuration in text format, with a comment header; parses
// back into WithDefaults(RulesConfig()).
std::string DefaultRulesText();

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_RULES_CONFIG_H_

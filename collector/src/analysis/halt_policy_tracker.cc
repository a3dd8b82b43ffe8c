#include "trainscope/collector/analysis/halt_policy_tracker.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {

double StepEfficiency(const v1::StepReport& step) {
  double compute = 0;
  double step_time = 0;
  for (const v1::DeviceStep& d : step.devices()) {
    if (!d.complete() || d.step_time_ns() <= 0) continue;
    compute += static_cast<double>(std::max<int64_t>(d.compute_ns(), 0));
    step_time += static_cast<double>(d.step_time_ns());
  }
  if (step_time <= 0) return -1;
  return compute / step_time;
}

absl::StatusOr<HaltPolicyTracker> HaltPolicyTracker::Create(
    v1::HaltPolicy policy, const std::vector<std::string>& extra_rule_names) {
  std::vector<std::string> known = KnownRuleNames();
  known.insert(known.end(), extra_rule_names.begin(), extra_rule_names.end());
  for (const std::string& rule : policy.halt_when()) {
    if (std::find(known.begin(), known.end(), rule) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--halt-when: unknown rule \"", rule, "\"; known rules: ", absl::StrJoin(known, ", ")));
    }
  }
  const bool has_condition = policy.halt_when_size() > 0 || policy.below_efficiency() != 0;
  if (has_condition && policy.for_steps() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--for: expected >= 1 consecutive steps, got ", policy.for_steps()));
  }
  if (policy.below_efficiency() != 0 &&
      !(policy.below_efficiency() > 0 && policy.below_efficiency() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--halt-below-efficiency: expected a fraction in (0, 1), got %g",
                        policy.below_efficiency()));
  }
  return HaltPolicyTracker(std::move(policy));
}

HaltPolicyTracker::HaltPolicyTracker(v1::HaltPolicy policy)
    : policy_(std::move(policy)), rule_runs_(policy_.halt_when_size()) {}

std::optional<HaltDecision> HaltPolicyTracker::OnStep(uint64_t step,
                                                      const std::vector<std::string>& holding_rules,
                                                      double efficiency) {
  if (decided_ || !policy_.enabled()) return std::nullopt;
  // A step that does not follow the previous one ends every run: the K steps
  // must be consecutive steps of the job.
  const bool follows = last_step_.has_value() && step == *last_step_ + 1;
  last_step_ = step;
  auto advance = [&](Run* run, bool holds) {
    if (!holds) {
      run->length = 0;
      return;
    }
    if (run->length == 0 || !follows) {
      run->length = 0;
      run->first_step = step;
    }
    ++run->length;
  };
  std::optional<HaltDecision> decision;
  for (int i = 0; i < policy_.halt_when_size(); ++i) {
    const std::string& rule = policy_.halt_when(i);
    const bool holds =
        std::find(holding_rules.begin(), holding_rules.end(), rule) != holding_rules.end();
    advance(&rule_runs_[i], holds);
    if (!decision && rule_runs_[i].length >= policy_.for_steps()) {
      decision =
          HaltDecision{rule, rule_runs_[i].first_step, step,
                       absl::StrFormat("%s held for %u consecutive steps (steps %u-%u)", rule,
                                       rule_runs_[i].length, rule_runs_[i].first_step, step)};
    }
  }
  if (policy_.below_efficiency() > 0) {
    const bool below = efficiency >= 0 && efficiency < policy_.below_efficiency();
    advance(&efficiency_run_, below);
    if (below) last_efficiency_ = efficiency;
    if (!decision && efficiency_run_.length >= policy_.for_steps()) {
      decision = HaltDecision{
          "efficiency", efficiency_run_.first_step, step,
          absl::StrFormat("efficiency stayed below %.2f for %u consecutive steps (steps %u-%u; "
                          "last %.2f)",
                          policy_.below_efficiency(), efficiency_run_.length,
                          efficiency_run_.first_step, step, last_efficiency_)};
    }
  }
  if (decision) decided_ = true;
  return decision;
}

}  // namespace trainscope::collector

#include "trainscope/collector/analysis/halt_policy_spec.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {

absl::StatusOr<v1::HaltPolicy> ParseHaltPolicy(absl::string_view halt_when, int64_t for_steps,
                                               double below_efficiency) {
  v1::HaltPolicy policy;
  const std::vector<std::string> known = KnownRuleNames();
  for (absl::string_view name : absl::StrSplit(halt_when, ',', absl::SkipWhitespace())) {
    name = absl::StripAsciiWhitespace(name);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--halt-when: unknown rule '", name, "'; expected one of ", absl::StrJoin(known, ", ")));
    }
    policy.add_halt_when(std::string(name));
  }
  if (below_efficiency < 0 || below_efficiency >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--halt-below-efficiency: ", below_efficiency,
                     " is out of range; expected a fraction between 0 and 1 (0: off)"));
  }
  policy.set_below_efficiency(below_efficiency);
  const bool any = policy.halt_when_size() > 0 || below_efficiency > 0;
  if (!any) {
    if (for_steps > 0) {
      return absl::InvalidArgumentError(
          "--for needs --halt-when RULE[,RULE...] or --halt-below-efficiency X");
    }
    return policy;  // disabled
  }
  if (for_steps < 1 || for_steps > 1'000'000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--for: ", for_steps,
        " is out of range; expected the number of consecutive steps (1 to 1000000) the "
        "condition must hold before the job is halted"));
  }
  policy.set_for_steps(static_cast<uint32_t>(for_steps));
  policy.set_enabled(true);
  return policy;
}

std::string DescribeHaltPolicy(const v1::HaltPolicy& policy) {
  if (!policy.enabled()) return "no halt policy";
  std::vector<std::string> conditions;
  if (policy.halt_when_size() > 0) {
    conditions.push_back(absl::StrCat(absl::StrJoin(policy.halt_when(), " or "), " holds"));
  }
  if (policy.below_efficiency() > 0) {
    conditions.push_back(absl::StrCat("efficiency is below ", policy.below_efficiency()));
  }
  return absl::StrCat("halt when ", absl::StrJoin(conditions, ", or "), " for ", policy.for_steps(),
                      " consecutive step", policy.for_steps() == 1 ? "" : "s");
}

}  // namespace trainscope::collector

// copy_stall: host-device copies stall a GPU. In the step, its H2D and D2H
// copies ran with no compute kernel beside them (DeviceStep.copy_stall_ns)
// for at least CopyStallRule.copy_fraction of the step and min_copy_ns:
// the device waited on the copies (pageable memory, no prefetch, a
// .item()/.cpu() in the loop). Devices without GPU work are not judged.
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/step_share.h"

namespace trainscope::collector {
namespace {

void Describe(const v1::DeviceStep& d, double stalled, double step_time, RuleVerdict* v) {
  v->what = absl::StrFormat("rank %u's GPU stalls on host-device copies", d.rank());
  v->values =
      absl::StrFormat("copies with no kernel running %s of a %s step (%.0f%%; H2D %s, D2H %s)",
                      FormatNs(stalled), FormatNs(step_time), 100.0 * stalled / step_time,
                      FormatNs(static_cast<double>(d.h2d_copy_ns())),
                      FormatNs(static_cast<double>(d.d2h_copy_ns())));
}

class CopyStallRule : public AlertRule {
 public:
  explicit CopyStallRule(const v1::CopyStallRule& rule) : rule_(rule) {}

  absl::string_view name() const override { return kRuleCopyStall; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step, const RuleHistory&) override {
    return StepShareVerdicts(step,
                             {.rule = kRuleCopyStall,
                              .metric = "copy_stall_ns",
                              .min_ns = rule_.min_copy_ns(),
                              .fraction = rule_.copy_fraction(),
                              .part_ns = [](const v1::DeviceStep& d) { return d.copy_stall_ns(); },
                              .describe = &Describe});
  }

 private:
  const v1::CopyStallRule rule_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeCopyStallRule(const v1::RulesConfig& rules) {
  if (!rules.copy_stall().enabled()) return nullptr;
  return std::make_unique<CopyStallRule>(rules.copy_stall());
}

}  // namespace trainscope::collector

// launch_bound: a GPU that idles because its host cannot launch work fast
// enough. In the step, the device ran nothing while its host was in
// operators (not syncing, not waiting for data) for at least
// LaunchBoundRule.idle_fraction of the step and min_idle_ns: more device
// work was coming, the host had not issued it yet. Devices without GPU work
// have no such figure and are not judged.
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/step_share.h"

namespace trainscope::collector {
namespace {

void Describe(const v1::DeviceStep& d, double idle, double step_time, RuleVerdict* v) {
  v->what = absl::StrFormat("rank %u's GPU waits for its host to launch work", d.rank());
  v->values =
      absl::StrFormat("GPU idle %s of a %s step while the host ran operators (%.0f%%), GPU busy %s",
                      FormatNs(idle), FormatNs(step_time), 100.0 * idle / step_time,
                      FormatNs(static_cast<double>(d.gpu_busy_ns())));
}

class LaunchBoundRule : public AlertRule {
 public:
  explicit LaunchBoundRule(const v1::LaunchBoundRule& rule) : rule_(rule) {}

  absl::string_view name() const override { return kRuleLaunchBound; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step, const RuleHistory&) override {
    return StepShareVerdicts(
        step, {.rule = kRuleLaunchBound,
               .metric = "gpu_idle_launch_bound_ns",
               .min_ns = rule_.min_idle_ns(),
               .fraction = rule_.idle_fraction(),
               .part_ns = [](const v1::DeviceStep& d) { return d.gpu_idle_launch_bound_ns(); },
               .describe = &Describe});
  }

 private:
  const v1::LaunchBoundRule rule_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeLaunchBoundRule(const v1::RulesConfig& rules) {
  if (!rules.launch_bound().enabled()) return nullptr;
  return std::make_unique<LaunchBoundRule>(rules.launch_bound());
}

}  // namespace trainscope::collector

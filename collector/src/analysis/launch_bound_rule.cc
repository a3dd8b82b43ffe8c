// launch_bound: a GPU that idles because its host cannot launch work fast
// enough. In the step, the device ran nothing while its host was in
// operators (not syncing, not waiting for data) for at least
// LaunchBoundRule.idle_fraction of the step and min_idle_ns: more device
// work was coming, the host had not issued it yet. Devices without GPU work
// have no such figure and are not judged.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

class LaunchBoundRule : public AlertRule {
 public:
  explicit LaunchBoundRule(const v1::LaunchBoundRule& rule) : rule_(rule) {}

  absl::string_view name() const override { return kRuleLaunchBound; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step, const RuleHistory&) override {
    std::vector<RuleVerdict> out;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      if (!d->has_gpu() || d->step_time_ns() <= 0) continue;
      const double step_time = static_cast<double>(d->step_time_ns());
      const double idle = static_cast<double>(d->gpu_idle_launch_bound_ns());
      const double threshold =
          std::max(static_cast<double>(rule_.min_idle_ns()), rule_.idle_fraction() * step_time);
      RuleVerdict v;
      v.subject = RankSubject(d->rank());
      v.holds = idle >= threshold;
      v.present = idle >= threshold / 2;
      v.alert = BaseAlert(kRuleLaunchBound);
      v.alert.add_ranks(d->rank());
      v.alert.set_cause_rank(static_cast<int32_t>(d->rank()));
      v.alert.set_stage(static_cast<int32_t>(d->stage()));
      v.alert.set_metric("gpu_idle_launch_bound_ns");
      v.alert.set_observed(idle);
      v.alert.set_baseline(step_time);
      v.alert.set_threshold(threshold);
      v.what = absl::StrFormat("rank %u's GPU waits for its host to launch work", d->rank());
      v.values = absl::StrFormat(
          "GPU idle %s of a %s step while the host ran operators (%.0f%%), GPU busy %s",
          FormatNs(idle), FormatNs(step_time), 100.0 * idle / step_time,
          FormatNs(static_cast<double>(d->gpu_busy_ns())));
      out.push_back(std::move(v));
    }
    return out;
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

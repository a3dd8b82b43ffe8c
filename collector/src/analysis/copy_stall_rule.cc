// copy_stall: host-device copies stall a GPU. In the step, its H2D and D2H
// copies ran with no compute kernel beside them (DeviceStep.copy_stall_ns)
// for at least CopyStallRule.copy_fraction of the step and min_copy_ns:
// the device waited on the copies (pageable memory, no prefetch, a
// .item()/.cpu() in the loop). Devices without GPU work are not judged.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

class CopyStallRule : public AlertRule {
 public:
  explicit CopyStallRule(const v1::CopyStallRule& rule) : rule_(rule) {}

  absl::string_view name() const override { return kRuleCopyStall; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step, const RuleHistory&) override {
    std::vector<RuleVerdict> out;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      if (!d->has_gpu() || d->step_time_ns() <= 0) continue;
      const double step_time = static_cast<double>(d->step_time_ns());
      const double stalled = static_cast<double>(d->copy_stall_ns());
      const double threshold =
          std::max(static_cast<double>(rule_.min_copy_ns()), rule_.copy_fraction() * step_time);
      RuleVerdict v;
      v.subject = RankSubject(d->rank());
      v.holds = stalled >= threshold;
      v.present = stalled >= threshold / 2;
      v.alert = BaseAlert(kRuleCopyStall);
      v.alert.add_ranks(d->rank());
      v.alert.set_cause_rank(static_cast<int32_t>(d->rank()));
      v.alert.set_stage(static_cast<int32_t>(d->stage()));
      v.alert.set_metric("copy_stall_ns");
      v.alert.set_observed(stalled);
      v.alert.set_baseline(step_time);
      v.alert.set_threshold(threshold);
      v.what = absl::StrFormat("rank %u's GPU stalls on host-device copies", d->rank());
      v.values = absl::StrFormat(
          "copies with no kernel running %s of a %s step (%.0f%%; H2D %s, D2H %s)",
          FormatNs(stalled), FormatNs(step_time), 100.0 * stalled / step_time,
          FormatNs(static_cast<double>(d->h2d_copy_ns())),
          FormatNs(static_cast<double>(d->d2h_copy_ns())));
      out.push_back(std::move(v));
    }
    return out;
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

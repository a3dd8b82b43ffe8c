// loader_stall: a device whose window median of data wait (waiting for its
// data loader) is at least LoaderStallRule.wait_fraction of its step time
// and min_wait_ns.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

class LoaderStallRule : public AlertRule {
 public:
  LoaderStallRule(const v1::LoaderStallRule& rule, size_t window_steps)
      : rule_(rule), window_steps_(window_steps) {}

  absl::string_view name() const override { return kRuleLoaderStall; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    const size_t window = window_steps_;
    std::vector<RuleVerdict> out;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      const std::deque<DeviceSample>* samples = history.DeviceWindow(d->rank());
      if (samples == nullptr || samples->size() < window) continue;
      const double wait =
          Median(Last(*samples, window, [](const DeviceSample& s) { return s.data_wait; }));
      const double step_time =
          Median(Last(*samples, window, [](const DeviceSample& s) { return s.step_time; }));
      if (step_time <= 0) continue;
      const double threshold =
          std::max(static_cast<double>(rule_.min_wait_ns()), rule_.wait_fraction() * step_time);
      RuleVerdict v;
      v.subject = RankSubject(d->rank());
      v.holds = wait >= threshold;
      v.present = wait >= threshold / 2;
      v.onset_step = TrailingOnset(*samples, window,
                                   [&](const DeviceSample& s) { return s.data_wait >= threshold; });
      v.alert = BaseAlert(kRuleLoaderStall);
      v.alert.add_ranks(d->rank());
      v.alert.set_cause_rank(static_cast<int32_t>(d->rank()));
      v.alert.set_stage(static_cast<int32_t>(d->stage()));
      v.alert.set_metric("data_wait_ns");
      v.alert.set_observed(wait);
      v.alert.set_baseline(step_time);
      v.alert.set_threshold(threshold);
      v.what = absl::StrFormat("rank %u stalls on its data loader", d->rank());
      v.values = absl::StrFormat("data wait median %s of a %s step (%.0f%%)", FormatNs(wait),
                                 FormatNs(step_time), 100.0 * wait / step_time);
      out.push_back(std::move(v));
    }
    return out;
  }

 private:
  const v1::LoaderStallRule rule_;
  const size_t window_steps_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeLoaderStallRule(const v1::RulesConfig& rules) {
  if (!rules.loader_stall().enabled()) return nullptr;
  return std::make_unique<LoaderStallRule>(rules.loader_stall(), rules.window_steps());
}

}  // namespace trainscope::collector

// low_flops: a device whose window median of achieved FLOPS is below its
// stage peers' median by LowFlopsRule.below_mean (stages run different
// layers at different rates, so only a stage's devices are compared).
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

class LowFlopsRule : public AlertRule {
 public:
  explicit LowFlopsRule(const v1::LowFlopsRule& rule) : rule_(rule) {}

  absl::string_view name() const override { return kRuleLowFlops; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    const size_t window = rule_.window_steps();
    // Window medians of the devices in this step, by stage.
    std::map<uint32_t, std::vector<std::pair<const v1::DeviceStep*, double>>> by_stage;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      const std::deque<DeviceSample>* samples = history.DeviceWindow(d->rank());
      if (samples == nullptr || samples->size() < window) continue;
      std::vector<double> rates =
          Last(*samples, window, [](const DeviceSample& s) { return s.flops_per_second; });
      rates.erase(std::remove(rates.begin(), rates.end(), 0.0), rates.end());
      if (rates.size() * 2 < window) continue;
      by_stage[d->stage()].emplace_back(d, Median(std::move(rates)));
    }
    std::vector<RuleVerdict> out;
    for (const auto& [stage, devices] : by_stage) {
      if (devices.size() < 2) continue;
      for (const auto& [d, rate] : devices) {
        std::vector<double> peers;
        for (const auto& [p, peer_rate] : devices) {
          if (p != d) peers.push_back(peer_rate);
        }
        out.push_back(Judge(*d, stage, rate, Median(std::move(peers)), history));
      }
    }
    return out;
  }

 private:
  RuleVerdict Judge(const v1::DeviceStep& d, uint32_t stage, double rate, double peers_median,
                    const RuleHistory& history) const {
    const size_t window = rule_.window_steps();
    const double threshold = (1 - rule_.below_mean()) * peers_median;
    RuleVerdict v;
    v.subject = RankSubject(d.rank());
    v.holds = peers_median > 0 && rate <= threshold;
    v.present = peers_median > 0 && rate <= (1 - rule_.below_mean() / 2) * peers_median;
    v.onset_step =
        TrailingOnset(*history.DeviceWindow(d.rank()), window, [&](const DeviceSample& s) {
          return s.flops_per_second > 0 && s.flops_per_second <= threshold;
        });
    v.alert = BaseAlert(kRuleLowFlops);
    v.alert.add_ranks(d.rank());
    v.alert.set_cause_rank(static_cast<int32_t>(d.rank()));
    v.alert.set_stage(static_cast<int32_t>(stage));
    v.alert.set_metric("flops_per_second");
    v.alert.set_observed(rate);
    v.alert.set_baseline(peers_median);
    v.alert.set_threshold(threshold);
    v.what = absl::StrFormat("rank %u achieves low FLOPS", d.rank());
    v.values = absl::StrFormat("median %s over %zu steps vs peers' %s (%.0f%% below)",
                               FormatRate(rate, "FLOPS"), window, FormatRate(peers_median, "FLOPS"),
                               100.0 * (1 - rate / peers_median));
    return v;
  }

  const v1::LowFlopsRule rule_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeLowFlopsRule(const v1::RulesConfig& rules) {
  if (!rules.low_flops().enabled()) return nullptr;
  return std::make_unique<LowFlopsRule>(rules.low_flops());
}

}  // namespace trainscope::collector

// collective_wait: who waits for whom. A device that holds the others up in
// collectives by HoldUpDetector's tests; its victims are those that waited
// for it in this step.
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/hold_up_detector.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

class CollectiveWaitRule : public AlertRule {
 public:
  explicit CollectiveWaitRule(const v1::RulesConfig& rules)
      : hysteresis_(rules.collective_wait().hysteresis()), hold_ups_(rules) {}

  absl::string_view name() const override { return kRuleCollectiveWait; }
  const v1::Hysteresis& hysteresis() const override { return hysteresis_; }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    std::vector<RuleVerdict> out;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      const uint32_t cause = d->rank();
      if (history.DeviceWindow(cause) == nullptr) continue;
      const HoldUpDetector::HoldUp held = hold_ups_.Detect(cause, history);
      if (!held.holds && !held.present) continue;
      std::vector<uint32_t> victims;
      for (const v1::DeviceStep& w : step.devices()) {
        if (w.rank() != cause && w.waited_for_rank() == static_cast<int32_t>(cause) &&
            w.wait_ns() > 0) {
          victims.push_back(w.rank());
        }
      }
      out.push_back(Verdict(cause, held, victims));
    }
    return out;
  }

 private:
  static RuleVerdict Verdict(uint32_t cause, const HoldUpDetector::HoldUp& held,
                             const std::vector<uint32_t>& victims) {
    const double threshold = held.threshold;
    RuleVerdict v;
    v.subject = RankSubject(cause);
    v.holds = held.holds;
    v.present = held.present;
    v.onset_step = held.onset;
    v.alert = BaseAlert(kRuleCollectiveWait);
    v.alert.add_ranks(cause);
    v.alert.set_cause_rank(static_cast<int32_t>(cause));
    for (uint32_t r : victims) v.alert.add_victim_ranks(r);
    v.alert.set_metric("wait_fraction");
    v.alert.set_observed(held.fraction);
    v.alert.set_baseline(0);
    v.alert.set_threshold(threshold);
    v.what = victims.empty() ? absl::StrFormat("the others wait for rank %u in collectives", cause)
                             : absl::StrFormat("rank%s %s wait%s for rank %u in collectives",
                                               victims.size() == 1 ? "" : "s", RankList(victims),
                                               victims.size() == 1 ? "s" : "", cause);
    v.values =
        held.late_arrival_evidence.empty()
            ? absl::StrFormat("a median %.0f%% of their step over %zu steps (threshold %.0f%%)",
                              100.0 * held.fraction, held.window, 100.0 * threshold)
            : held.late_arrival_evidence;
    return v;
  }

  const v1::Hysteresis hysteresis_;
  const HoldUpDetector hold_ups_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeCollectiveWaitRule(const v1::RulesConfig& rules) {
  if (!rules.collective_wait().enabled()) return nullptr;
  return std::make_unique<CollectiveWaitRule>(rules);
}

}  // namespace trainscope::collector

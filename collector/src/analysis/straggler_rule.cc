// straggler: a device whose own time (step time minus what it waited for:
// others, data) is above its stage peers' over a window, while it holds the
// others up (HoldUpDetector), or that is clearly slower and holds the others
// up step after step (the streak test; see StragglerRule in alerts.proto).
// Devices of different pipeline stages do different work: only a stage's
// devices are compared. A straggler's own time grows, its victims' does not.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/hold_up_detector.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

// Identical devices would make the MAD (and every z-score) explode; the floor
// treats spreads under 2 % of the median as noise.
constexpr double kMadFloorFraction = 0.02;
// Normal-consistent MAD scale.
constexpr double kMadScale = 1.4826;

class StragglerRule : public AlertRule {
 public:
  explicit StragglerRule(const v1::RulesConfig& rules)
      : rule_(rules.straggler()),
        streak_steps_(rules.collective_wait().streak_steps()),
        hold_ups_(rules) {}

  absl::string_view name() const override { return kRuleStraggler; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    std::vector<RuleVerdict> out;
    if (history.steps_seen() <= rule_.warmup_steps()) return out;
    std::map<uint32_t, std::vector<const v1::DeviceStep*>> by_stage;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      const std::deque<DeviceSample>* samples = history.DeviceWindow(d->rank());
      if (samples != nullptr && samples->size() >= rule_.window_steps()) {
        by_stage[d->stage()].push_back(d);
      }
    }
    for (const auto& [stage, devices] : by_stage) {
      if (devices.size() < 2) continue;
      for (const v1::DeviceStep* d : devices) {
        std::optional<RuleVerdict> v = Judge(step, stage, d->rank(), devices, history);
        if (v.has_value()) out.push_back(std::move(*v));
      }
    }
    return out;
  }

 private:
  // The verdict on `rank` against the other `devices` of its stage; none
  // when it holds nobody up or its peers have no own time.
  std::optional<RuleVerdict> Judge(const v1::StepReport& step, uint32_t stage, uint32_t rank,
                                   const std::vector<const v1::DeviceStep*>& devices,
                                   const RuleHistory& history) const {
    auto own = [](const DeviceSample& s) { return s.own; };
    const std::deque<DeviceSample>& samples = *history.DeviceWindow(rank);
    const HoldUpDetector::HoldUp held = hold_ups_.Detect(rank, history);
    // The streak test: clearly slower and holding the others up, step
    // after step (see StragglerRule).
    auto streaking = [&](const DeviceSample& s) {
      return s.own_ratio >= 1 + rule_.streak_excess() && s.held_up >= rule_.streak_wait_fraction();
    };
    const bool streak = samples.size() >= streak_steps_ &&
                        std::all_of(samples.end() - static_cast<std::ptrdiff_t>(streak_steps_),
                                    samples.end(), streaking);
    if (!held.holds && !held.present && !streak) return std::nullopt;
    // Own time over the window of the hold-up test that decided (the
    // sustained test looks at a long window, so does this one).
    const size_t window = std::max<size_t>(rule_.window_steps(), held.window);
    const double mine = Median(Last(samples, window, own));
    std::vector<double> peer_medians;
    std::vector<double> pool;
    for (const v1::DeviceStep* p : devices) {
      if (p->rank() == rank) continue;
      std::vector<double> owns = Last(*history.DeviceWindow(p->rank()), window, own);
      peer_medians.push_back(Median(owns));
      pool.insert(pool.end(), owns.begin(), owns.end());
    }
    const double median = Median(std::move(peer_medians));
    if (median <= 0) return std::nullopt;
    const double pool_median = Median(pool);
    std::vector<double> deviations;
    for (double x : pool) deviations.push_back(std::fabs(x - pool_median));
    const double mad = std::max(Median(std::move(deviations)), kMadFloorFraction * median);
    // The spread of a window median: about 1.25 sigma / sqrt(n).
    const double sigma = kMadScale * mad * 1.25 / std::sqrt(static_cast<double>(window));
    const double z = (mine - median) / sigma;
    const double threshold =
        std::max(median + rule_.z_threshold() * sigma, (1 + rule_.min_excess()) * median);
    RuleVerdict v;
    v.subject = RankSubject(rank);
    v.holds = (held.holds && mine >= threshold) || streak;
    // Hysteresis band: an open alert stays while half the margin remains.
    v.present = (held.present && mine >= (median + threshold) / 2) || streak;
    v.onset_step =
        held.holds || !streak ? held.onset : TrailingOnset(samples, samples.size(), streaking);
    v.alert = BaseAlert(kRuleStraggler);
    v.alert.add_ranks(rank);
    v.alert.set_cause_rank(static_cast<int32_t>(rank));
    v.alert.set_stage(static_cast<int32_t>(stage));
    // Those who waited for it in this step are its victims.
    for (const v1::DeviceStep& w : step.devices()) {
      if (w.rank() != rank && w.waited_for_rank() == static_cast<int32_t>(rank) &&
          w.wait_ns() > 0) {
        v.alert.add_victim_ranks(w.rank());
      }
    }
    v.alert.set_metric("own_ns");
    v.alert.set_observed(mine);
    v.alert.set_baseline(median);
    v.alert.set_threshold(threshold);
    v.what = absl::StrFormat("rank %u is a straggler", rank);
    v.values = absl::StrFormat(
        "own time (step minus waits) %s vs peers' %s over %zu steps (z=%.1f); %s", FormatNs(mine),
        FormatNs(median), window, z,
        held.late_arrival_evidence.empty()
            ? absl::StrFormat("the others wait %.0f%% of their step for it", 100.0 * held.fraction)
            : held.late_arrival_evidence);
    return v;
  }

  const v1::StragglerRule rule_;
  const size_t streak_steps_;  // collective_wait's: the streak test's length
  const HoldUpDetector hold_ups_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeStragglerRule(const v1::RulesConfig& rules) {
  if (!rules.straggler().enabled()) return nullptr;
  return std::make_unique<StragglerRule>(rules);
}

}  // namespace trainscope::collector

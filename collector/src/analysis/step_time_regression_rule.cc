// step_time_regression: the job's step time (the median of its devices')
// against a baseline, the median of its first baseline_steps steps after
// the rule's warmup. The job's step time jitters with every device's, and
// on a shared host drifts for tens of steps. Two tests, as for
// collective_wait: fast, the median of the last window_steps steps and this
// step rose by `rise`; sustained, the median of the last sustained_steps
// steps rose by `sustained_rise` and the recent median by half of it.
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

// The job's step time: the median of its devices' (robust to one late mark).
double JobStepTime(const std::vector<const v1::DeviceStep*>& devices) {
  std::vector<double> times;
  for (const v1::DeviceStep* d : devices) {
    if (d->step_time_ns() > 0) times.push_back(static_cast<double>(d->step_time_ns()));
  }
  return Median(std::move(times));
}

class StepTimeRegressionRule : public AlertRule {
 public:
  StepTimeRegressionRule(const v1::StepTimeRegressionRule& rule, size_t window_steps)
      : rule_(rule), window_steps_(window_steps) {}

  absl::string_view name() const override { return kRuleStepTimeRegression; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    std::vector<RuleVerdict> out;
    if (history.steps_seen() <= rule_.warmup_steps()) return out;
    const std::vector<const v1::DeviceStep*> devices = CompleteDevices(step);
    const double this_step_time = JobStepTime(devices);
    if (this_step_time <= 0) return out;
    if (baseline_samples_.size() < rule_.baseline_steps()) {
      baseline_samples_.push_back(static_cast<int64_t>(this_step_time));
      if (baseline_samples_.size() == rule_.baseline_steps()) {
        baseline_ns_ = Median({baseline_samples_.begin(), baseline_samples_.end()});
      }
      return out;
    }
    recent_.emplace_back(step.step(), this_step_time);
    while (recent_.size() > rule_.sustained_steps()) recent_.pop_front();
    const double base = baseline_ns_;
    const double recent = MedianOfLast(window_steps_);
    const double sustained = MedianOfLast(rule_.sustained_steps());
    const bool fast =
        recent >= (1 + rule_.rise()) * base && this_step_time >= (1 + rule_.rise()) * base;
    const bool slow = recent_.size() >= rule_.sustained_steps() &&
                      sustained >= (1 + rule_.sustained_rise()) * base &&
                      recent >= (1 + rule_.sustained_rise() / 2) * base;
    const double step_time = fast || !slow ? recent : sustained;
    const double threshold = (1 + (fast || !slow ? rule_.rise() : rule_.sustained_rise())) * base;
    RuleVerdict v;
    v.subject = "job";
    v.holds = fast || slow;
    // Band: an open alert stays while the recent median keeps half the
    // sustained rise.
    v.present = recent >= (1 + rule_.sustained_rise() / 2) * base;
    // Onset: the first of the trailing slow steps.
    for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
      if (it->second < threshold) break;
      v.onset_step = it->first;
    }
    v.alert = BaseAlert(kRuleStepTimeRegression);
    // The likely cause: the one device the late-arrival test finds everyone
    // waiting for (none when no device or several are).
    int32_t cause = -1;
    for (const v1::DeviceStep* d : devices) {
      v.alert.add_ranks(d->rank());
      const LateArrivalDetector::State* late = history.late_arrivals().Find(d->rank());
      if (late == nullptr || !late->alarmed) continue;
      cause = cause == -1 ? static_cast<int32_t>(d->rank()) : -2;
    }
    if (cause >= 0) v.alert.set_cause_rank(cause);
    v.alert.set_metric("step_time_ns");
    v.alert.set_observed(step_time);
    v.alert.set_baseline(baseline_ns_);
    v.alert.set_threshold(threshold);
    v.what = "the job's step time regressed";
    v.values = absl::StrFormat("%s vs baseline %s (%+.0f%%)", FormatNs(step_time),
                               FormatNs(baseline_ns_), 100.0 * (step_time / baseline_ns_ - 1));
    out.push_back(std::move(v));
    return out;
  }

 private:
  double MedianOfLast(size_t n) const {
    std::vector<double> times;
    const size_t from = recent_.size() > n ? recent_.size() - n : 0;
    for (size_t i = from; i < recent_.size(); ++i) times.push_back(recent_[i].second);
    return Median(std::move(times));
  }

  const v1::StepTimeRegressionRule rule_;
  const size_t window_steps_;
  // The job's step times collected for the baseline, then the baseline.
  std::vector<int64_t> baseline_samples_;
  double baseline_ns_ = 0;
  // The job's step times since the baseline, at most sustained_steps: (step, ns).
  std::deque<std::pair<uint64_t, double>> recent_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeStepTimeRegressionRule(const v1::RulesConfig& rules) {
  if (!rules.step_time_regression().enabled()) return nullptr;
  return std::make_unique<StepTimeRegressionRule>(rules.step_time_regression(),
                                                  rules.window_steps());
}

}  // namespace trainscope::collector

#include "trainscope/collector/analysis/step_share.h"

#include <algorithm>
#include <string>
#include <utility>

#include "trainscope/collector/analysis/rule_history.h"

namespace trainscope::collector {

std::vector<RuleVerdict> StepShareVerdicts(const v1::StepReport& step, const StepShare& share) {
  std::vector<RuleVerdict> out;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    // A device without GPU work has no such part to judge.
    if (!d->has_gpu() || d->step_time_ns() <= 0) continue;
    const double step_time = static_cast<double>(d->step_time_ns());
    const double part = static_cast<double>(share.part_ns(*d));
    const double threshold =
        std::max(static_cast<double>(share.min_ns), share.fraction * step_time);
    RuleVerdict v;
    v.subject = RankSubject(d->rank());
    v.holds = part >= threshold;
    v.present = part >= threshold / 2;
    v.alert = BaseAlert(share.rule);
    v.alert.add_ranks(d->rank());
    v.alert.set_cause_rank(static_cast<int32_t>(d->rank()));
    v.alert.set_stage(static_cast<int32_t>(d->stage()));
    v.alert.set_metric(std::string(share.metric));
    v.alert.set_observed(part);
    v.alert.set_baseline(step_time);
    v.alert.set_threshold(threshold);
    share.describe(*d, part, step_time, &v);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace trainscope::collector

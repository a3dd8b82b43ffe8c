#include "trainscope/collector/analysis/lost_device_rule.h"

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_rule.h"
#include "trainscope/collector/analysis/rule_history.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

// A raise of lost_device for `rank`, measured by `metric` against `threshold`.
LostDeviceRule::Change Raise(uint32_t rank, const char* metric, double observed,
                             double threshold, uint64_t step, uint64_t onset_step) {
  LostDeviceRule::Change raise;
  raise.rank = rank;
  raise.lost = true;
  raise.alert = BaseAlert(kRuleLostDevice);
  raise.alert.add_ranks(rank);
  raise.alert.set_cause_rank(static_cast<int32_t>(rank));
  raise.alert.set_metric(metric);
  raise.alert.set_observed(observed);
  raise.alert.set_baseline(0);
  raise.alert.set_threshold(threshold);
  raise.step = step;
  raise.onset_step = onset_step;
  return raise;
}

}  // namespace

std::vector<LostDeviceRule::Change> LostDeviceRule::OnStep(const v1::StepReport& step) {
  std::vector<Change> out;
  if (!rule_.enabled()) return out;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    auto it = ranks_.find(d->rank());
    if (it == ranks_.end()) continue;
    // A step its stream had already reported before it closed: old news.
    if (it->second.stream_lost_after && step.step() <= *it->second.stream_lost_after) continue;
    if (it->second.lost) {
      Change clear;
      clear.rank = d->rank();
      clear.step = step.step();
      clear.message = absl::StrFormat("rank %u reports steps again", d->rank());
      out.push_back(std::move(clear));
    }
    ranks_.erase(it);
  }
  for (uint32_t rank : step.missing_ranks()) {
    RankState& state = ranks_[rank];
    ++state.missing_run;
    if (state.lost || state.missing_run < rule_.missing_steps()) continue;
    const uint64_t onset =
        step.step() + 1 >= state.missing_run ? step.step() + 1 - state.missing_run : 0;
    Change raise = Raise(rank, "missing_steps", state.missing_run, rule_.missing_steps(),
                         step.step(), onset);
    raise.message = absl::StrFormat(
        "rank %u is lost: it reported none of the last %u closed steps since step %u", rank,
        state.missing_run, raise.onset_step);
    state.lost = true;
    out.push_back(std::move(raise));
  }
  return out;
}

std::optional<LostDeviceRule::Change> LostDeviceRule::OnStreamLost(uint32_t rank,
                                                                   uint64_t last_step) {
  if (!rule_.enabled()) return std::nullopt;
  RankState& state = ranks_[rank];
  if (state.lost) return std::nullopt;
  Change raise = Raise(rank, "stream", 1, 1, last_step, last_step);
  raise.message = absl::StrFormat(
      "rank %u is lost: its stream closed without goodbye after step %u", rank, last_step);
  state.lost = true;
  state.stream_lost_after = last_step;
  return raise;
}

std::optional<LostDeviceRule::Change> LostDeviceRule::OnDeviceBack(uint32_t rank, uint64_t step) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return std::nullopt;
  const bool lost = it->second.lost;
  ranks_.erase(it);
  if (!lost) return std::nullopt;
  Change clear;
  clear.rank = rank;
  clear.step = step;
  clear.message = absl::StrFormat("rank %u is back", rank);
  return clear;
}

bool LostDeviceRule::any_lost() const {
  for (const auto& [rank, state] : ranks_) {
    if (state.lost) return true;
  }
  return false;
}

}  // namespace trainscope::collector

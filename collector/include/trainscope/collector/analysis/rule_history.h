// What the alert rules know of a job's past: per-device, per-stage and
// per-link windows of the last closed steps, and the late-arrival detector,
// updated once per closed step by the AlertEngine and read by every rule (no
// rule keeps its own copy of a window).
//
// Noise: on a shared host single steps jitter by 2x, so rules judge window
// medians, not single steps. A device's window keeps its complete steps
// only, as many as the longest window a rule reads; a stage's window is
// dropped when the stage leaves the report; a link's keeps the samples of
// the last `window_steps` step numbers.
//
// Usage:
//   RuleHistory history(WithDefaults(rules));
//   for each closed StepReport:
//     history.OnStep(report);
//     if (history.in_warmup()) continue;
//     const std::deque<DeviceSample>* w = history.DeviceWindow(rank);
//     double own = Median(Last(*w, 5, [](const DeviceSample& s) { return s.own; }));
//
// Threading: not thread-safe; owned by the AlertEngine's thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_RULE_HISTORY_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_RULE_HISTORY_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "trainscope/collector/analysis/late_arrival_detector.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

// One complete device step, as the windowed rules read it.
struct DeviceSample {
  uint64_t step = 0;
  uint32_t stage = 0;
  double step_time = 0;
  double own = 0;  // step_time - wait - data_wait
  double wait = 0;
  double data_wait = 0;
  double flops_per_second = 0;  // 0: no FLOPs counted
  int32_t waited_for = -1;
  // The others' median fraction of their step spent waiting for this device.
  double held_up = 0;
  // Own time over the median of its stage peers' in this step (0: no peers).
  double own_ratio = 0;
};

// One pipeline stage in one step.
struct StageSample {
  uint64_t step = 0;
  std::vector<uint32_t> ranks;
  double flops = 0;
  double compute = 0;
  double bubble = 0;
};

// One link in one step.
struct LinkSample {
  uint64_t step = 0;
  std::string type;
  double bytes = 0;
  double bytes_per_second = 0;
  double duration_ns = 0;  // the link's transfer time in the step
  double step_ns = 0;      // the step's, first start to last end
  // Enough bytes and, for a collective link, not dominated by waiting.
  bool usable = false;
};

class RuleHistory {
 public:
  // `rules` with defaults filled (WithDefaults).
  explicit RuleHistory(const v1::RulesConfig& rules);

  // Counts the step; past the job's warmup_steps, appends its complete
  // devices, its stages and its links to the windows and feeds the
  // late-arrival detector.
  void OnStep(const v1::StepReport& step);

  // Whether the last step was within the job's warmup (nothing recorded).
  bool in_warmup() const { return steps_seen_ <= warmup_steps_; }
  // Steps seen, warmup included.
  uint64_t steps_seen() const { return steps_seen_; }

  // The last samples of one device (complete steps only); nullptr for a
  // device never recorded.
  const std::deque<DeviceSample>* DeviceWindow(uint32_t rank) const;
  const std::map<uint32_t, std::deque<DeviceSample>>& device_windows() const { return devices_; }
  // By stage, for the stages of the last step.
  const std::map<uint32_t, std::deque<StageSample>>& stage_windows() const { return stages_; }
  // nullptr for a link not in the last `window_steps` steps.
  const std::deque<LinkSample>* LinkWindow(const std::string& key) const;
  // A link's key ("collective 0000000001 0000000002"); keys sort by type,
  // then numerically by ranks.
  static std::string LinkKey(const v1::LinkStep& link);

  const LateArrivalDetector& late_arrivals() const { return late_arrivals_; }

 private:
  void RecordDevices(const v1::StepReport& step);
  void RecordStages(const v1::StepReport& step);
  void RecordLinks(const v1::StepReport& step);

  const uint32_t warmup_steps_;
  const size_t window_steps_;  // the links' window
  const uint64_t min_link_bytes_;
  size_t history_size_ = 0;  // device and stage samples kept: the longest window
  uint64_t steps_seen_ = 0;
  std::map<uint32_t, std::deque<DeviceSample>> devices_;
  std::map<uint32_t, std::deque<StageSample>> stages_;
  std::map<std::string, std::deque<LinkSample>> links_;
  LateArrivalDetector late_arrivals_;
};

// The devices of `step` that completed it.
std::vector<const v1::DeviceStep*> CompleteDevices(const v1::StepReport& step);

// The last `n` values of a window (all when shorter).
template <typename Sample, typename Field>
std::vector<double> Last(const std::deque<Sample>& window, size_t n, Field field) {
  std::vector<double> out;
  const size_t from = window.size() > n ? window.size() - n : 0;
  for (size_t i = from; i < window.size(); ++i) out.push_back(field(window[i]));
  return out;
}

// The first step of the trailing run of the last `n` samples whose own test
// holds (the cause's onset), or the last step when none does.
template <typename Sample, typename Test>
uint64_t TrailingOnset(const std::deque<Sample>& window, size_t n, Test test) {
  uint64_t onset = window.empty() ? 0 : window.back().step;
  const size_t from = window.size() > n ? window.size() - n : 0;
  for (size_t i = window.size(); i > from; --i) {
    if (!test(window[i - 1])) break;
    onset = window[i - 1].step;
  }
  return onset;
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_RULE_HISTORY_H_

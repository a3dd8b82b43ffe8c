// Whether a device holds the others up in collectives (collective_wait's
// three tests, which the straggler rule reuses to decide that a slow device
// matters): the fast test (every one of the last streak_steps steps over
// min_wait_fraction), the sustained one (the median of the last
// sustained_steps over sustained_wait_fraction while the recent median keeps
// half of it) and the late-arrival CUSUM (RuleHistory::late_arrivals()).
//
// Usage:
//   HoldUpDetector detector(WithDefaults(rules));
//   HoldUpDetector::HoldUp held = detector.Detect(rank, history);
//   if (held.holds) ... held.fraction, held.window, held.late_arrival_evidence ...
//
// Threading: immutable after construction; Detect is const and reads only
// its arguments.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_HOLD_UP_DETECTOR_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_HOLD_UP_DETECTOR_H_

#include <cstdint>
#include <string>

#include "trainscope/collector/analysis/rule_history.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

class HoldUpDetector {
 public:
  // The verdict on one device.
  struct HoldUp {
    bool holds = false;    // the fast, the sustained or the late-arrival test holds
    bool present = false;  // half the margin remains (keeps an open alert)
    size_t window = 0;     // the window of the test that decided
    double fraction = 0;   // the median hold-up over that window
    double threshold = 0;  // that test's threshold
    uint64_t onset = 0;    // first step of the trailing run over the threshold
    // Set when the late-arrival CUSUM decided: "last to arrive in ...".
    std::string late_arrival_evidence;
  };

  // `rules` with defaults filled.
  explicit HoldUpDetector(const v1::RulesConfig& rules)
      : rule_(rules.collective_wait()), recent_steps_(rules.window_steps()) {}

  // `rank` must have a device window in `history`.
  HoldUp Detect(uint32_t rank, const RuleHistory& history) const;

 private:
  const v1::CollectiveWaitRule rule_;
  const size_t recent_steps_;  // the window of the "recent" median
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_HOLD_UP_DETECTOR_H_

#include "trainscope/collector/analysis/hold_up_detector.h"

#include <algorithm>
#include <vector>

#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {

HoldUpDetector::HoldUp HoldUpDetector::Detect(uint32_t rank, const RuleHistory& history) const {
  const std::deque<DeviceSample>& window = *history.DeviceWindow(rank);
  auto held_up = [](const DeviceSample& s) { return s.held_up; };
  HoldUp out;
  const size_t streak = rule_.streak_steps();
  const size_t sustained = rule_.sustained_steps();
  const size_t recent = std::min<size_t>(recent_steps_, window.size());
  if (window.size() >= streak) {
    const std::vector<double> last = Last(window, streak, held_up);
    if (*std::min_element(last.begin(), last.end()) >= rule_.min_wait_fraction()) {
      out = {true, true, streak, Median(last), rule_.min_wait_fraction(), 0, {}};
    }
  }
  // The recent median: without half the sustained margin there, the cause
  // is gone whatever the long window still remembers.
  const double recent_median = Median(Last(window, recent, held_up));
  const bool recent_present = recent_median >= rule_.sustained_wait_fraction() / 2;
  if (!out.holds && recent_present && window.size() >= sustained) {
    const double median = Median(Last(window, sustained, held_up));
    if (median >= rule_.sustained_wait_fraction()) {
      out = {true, true, sustained, median, rule_.sustained_wait_fraction(), 0, {}};
    }
  }
  // The late-arrival CUSUM: a small slowdown that holds nobody up for long
  // in any one step but makes the device the last arriver again and again.
  const LateArrivalDetector& late_arrivals = history.late_arrivals();
  const LateArrivalDetector::State* late = late_arrivals.Find(rank);
  if (!out.holds && late != nullptr && late->alarmed) {
    out.holds = true;
    out.present = true;
    out.window = late->steps;
    out.fraction = Median(Last(window, std::max<size_t>(late->steps, 1), held_up));
    out.threshold = rule_.late_arrival_threshold();
    out.onset = late->onset_step;
    out.late_arrival_evidence = late->Evidence(late_arrivals.devices());
    return out;
  }
  if (!out.holds) {
    out.window = recent;
    out.fraction = recent_median;
    out.present = recent_present;
  }
  if (!out.holds) out.threshold = rule_.min_wait_fraction();
  out.onset = TrailingOnset(window, std::max<size_t>(out.window, 1),
                            [&](const DeviceSample& s) { return s.held_up >= out.threshold; });
  return out;
}

}  // namespace trainscope::collector

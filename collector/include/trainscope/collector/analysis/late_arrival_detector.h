// Finds the device that everyone waits for, statistically: per device, two
// one-sided CUSUMs (Page's cumulative sums) of how it arrives in the step's
// collectives against every other device.
//
// Each step where every device of the job completed and met in collectives,
// a device's margin is its lateness (its arrival minus the earliest
// participant's: StepReport's DeviceStep.lateness_ns) minus the latest
// lateness among the OTHER devices, as a fraction of the job's step time:
// positive only for the step's last arriver (by how much it was last),
// negative for the others (how far ahead of the last one they were).
//   magnitude:  S = max(0, S + clamp(margin, -cap, cap) - reference)
//   frequency:  F = max(0, F + log(p1 / p0))          when margin >= min_margin
//                   max(0, F + log((1 - p1) / (1 - p0)))  otherwise
//               with p0 = 1 / devices (chance) and p1 = frequency_ratio / devices
// A device alarms when S reaches `threshold` or F `frequency_threshold`, and
// stays alarmed until both have been 0 for `clear_steps` steps running. S and
// F never exceed their thresholds, so that an alarm ends within a few steps
// of the fault (for F, threshold / -log((1 - p1) / (1 - p0)) steps: 8 at 4
// devices, 24 at 8).
//
// Why these: on a shared host the late arriver of a collective moves from
// device to device and stays a few steps; such noise is last by small
// margins and not for long, and the other devices' leads pull S and F back
// down. A much slower device is last by a wide margin: S finds it in a step
// or two. A slightly slower one is last by a few % of the step, but again
// and again: F finds it. Neither alone does both (bench/scenario_detection.py).
//
// False alarms: with the defaults, 1 in 7,584 clean rank-steps (gloo, 4 and
// 8 ranks, a loaded 2-core host; docs/alerts.md has the measurement).
//
// Besides the statistics it keeps the evidence a person checks: since the
// current run above 0 began (the onset), in how many steps the device was
// last and by what median margin.
//
// Usage:
//   LateArrivalDetector detector(options);
//   for each closed StepReport: detector.OnStep(report);
//   const LateArrivalDetector::State* s = detector.Find(rank);
//   if (s != nullptr && s->alarmed) ... s->Evidence(detector.devices()) ...
//
// Threading: not thread-safe; one thread owns it (the AlertEngine's).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_LATE_ARRIVAL_DETECTOR_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_LATE_ARRIVAL_DETECTOR_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class LateArrivalDetector {
 public:
  struct Options {
    // The magnitude CUSUM, in fractions of the job's step time.
    double reference = 0.08;
    double threshold = 0.5;
    double cap = 0.3;  // bound on one step's margin
    // The frequency CUSUM.
    double frequency_ratio = 3;
    double frequency_threshold = 8;
    double min_margin = 0.02;  // a "last" by less is a tie
    uint32_t clear_steps = 3;
  };

  // One device's statistic and evidence.
  struct State {
    double magnitude = 0;  // S
    double frequency = 0;  // F
    bool alarmed = false;
    uint64_t onset_step = 0;           // first step of the current run of S or F > 0
    uint32_t steps = 0;                // judged steps since the onset
    uint32_t last_steps = 0;           // of them, steps where this device arrived last
    uint32_t zero_run = 0;             // consecutive steps with S == F == 0
    // Its margins in the last kKeptMargins steps it was last, since the onset.
    std::deque<double> last_margins;
    static constexpr size_t kKeptMargins = 128;
    double MedianLastMargin() const;
    // "last to arrive in 21 of 50 steps (12% expected) by a median margin
    // of 18% of the step" (the alert's message goes on: " since step 40").
    std::string Evidence(size_t devices) const;
  };

  explicit LateArrivalDetector(Options options) : options_(options) {}

  // Judges one closed step; steps where a device is incomplete or no
  // collective met are skipped (they say nothing about arrival order).
  void OnStep(const trainscope::v1::StepReport& step);

  // nullptr for a device never judged.
  const State* Find(uint32_t rank) const;
  // Devices in the last judged step.
  size_t devices() const { return devices_; }

 private:
  Options options_;
  std::map<uint32_t, State> states_;
  size_t devices_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_LATE_ARRIVAL_DETECTOR_H_

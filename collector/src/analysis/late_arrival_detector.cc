#include "trainscope/collector/analysis/late_arrival_detector.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {

namespace v1 = trainscope::v1;

double LateArrivalDetector::State::MedianLastMargin() const {
  return Median({last_margins.begin(), last_margins.end()});
}

std::string LateArrivalDetector::State::Evidence(size_t devices) const {
  return absl::StrFormat(
      "last to arrive in %u of %u steps (%.0f%% expected) by a median margin of %.0f%% of "
      "the step",
      last_steps, steps, devices > 0 ? 100.0 / static_cast<double>(devices) : 0.0,
      100.0 * MedianLastMargin());
}

void LateArrivalDetector::OnStep(const v1::StepReport& step) {
  std::vector<const v1::DeviceStep*> devices;
  std::vector<double> step_times;
  bool met = false;
  for (const v1::DeviceStep& d : step.devices()) {
    if (!d.complete()) return;
    devices.push_back(&d);
    if (d.step_time_ns() > 0) step_times.push_back(static_cast<double>(d.step_time_ns()));
    met |= d.collectives() > 0 && d.lateness_ns() > 0;
  }
  if (devices.size() < 2 || !met || step.missing_ranks_size() > 0) return;
  const double step_time = Median(std::move(step_times));
  if (step_time <= 0) return;
  devices_ = devices.size();

  // The two latest arrivals: each device's margin is over the latest other.
  const v1::DeviceStep* latest = nullptr;
  int64_t first = -1;
  int64_t second = -1;
  for (const v1::DeviceStep* d : devices) {
    if (d->lateness_ns() > first) {
      second = first;
      first = d->lateness_ns();
      latest = d;
    } else if (d->lateness_ns() > second) {
      second = d->lateness_ns();
    }
  }
  const double chance = 1.0 / static_cast<double>(devices.size());
  const double likely = std::min(0.95, options_.frequency_ratio * chance);
  const double last_weight = std::log(likely / chance);
  const double other_weight = std::log((1 - likely) / (1 - chance));
  for (const v1::DeviceStep* d : devices) {
    const int64_t latest_other = d == latest ? second : first;
    const double margin = static_cast<double>(d->lateness_ns() - latest_other) / step_time;
    const bool last = margin >= options_.min_margin;
    State& s = states_[d->rank()];
    const bool was_zero = s.magnitude <= 0 && s.frequency <= 0;
    // Held under their thresholds: a long fault must not bank evidence that
    // keeps the alarm on long after it ended.
    s.magnitude = std::clamp(
        s.magnitude + std::clamp(margin, -options_.cap, options_.cap) - options_.reference, 0.0,
        options_.threshold);
    s.frequency = std::clamp(s.frequency + (last ? last_weight : other_weight), 0.0,
                             options_.frequency_threshold);
    if (s.magnitude <= 0 && s.frequency <= 0) {
      ++s.zero_run;
      if (s.alarmed && s.zero_run >= options_.clear_steps) s.alarmed = false;
      if (!s.alarmed) {
        s.steps = 0;
        s.last_steps = 0;
        s.last_margins.clear();
      }
      continue;
    }
    s.zero_run = 0;
    if (was_zero && !s.alarmed) s.onset_step = step.step();
    ++s.steps;
    if (last) {
      ++s.last_steps;
      s.last_margins.push_back(margin);
      if (s.last_margins.size() > State::kKeptMargins) s.last_margins.pop_front();
    }
    if (s.magnitude >= options_.threshold || s.frequency >= options_.frequency_threshold) {
      s.alarmed = true;
    }
  }
}

const LateArrivalDetector::State* LateArrivalDetector::Find(uint32_t rank) const {
  auto it = states_.find(rank);
  return it == states_.end() ? nullptr : &it->second;
}

}  // namespace trainscope::collector

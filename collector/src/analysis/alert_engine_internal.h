// Helpers shared by AlertEngine's two source files (alert_engine.cc: the
// engine, hysteresis and lost devices; alert_rules.cc: the rule tests).
// Private to the library.
#ifndef TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ALERT_ENGINE_INTERNAL_H_
#define TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ALERT_ENGINE_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/statistics.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector::alert_internal {

namespace v1 = trainscope::v1;

// Identical devices would make the MAD (and every z-score) explode; the floor
// treats spreads under 2 % of the median as noise.
inline constexpr double kMadFloorFraction = 0.02;
// Normal-consistent MAD scale.
inline constexpr double kMadScale = 1.4826;
// Links carrying byte counts within this factor of each other are compared.
inline constexpr double kLinkBytesRatio = 2;

using ::trainscope::collector::Median;

inline double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

inline std::string FormatNs(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return absl::StrFormat("%.2f s", ns / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.1f ms", ns / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.0f us", ns / 1e3);
  return absl::StrFormat("%.0f ns", ns);
}

inline std::string FormatRate(double per_second, absl::string_view unit) {
  const double a = std::fabs(per_second);
  if (a >= 1e12) return absl::StrFormat("%.2f T%s", per_second / 1e12, unit);
  if (a >= 1e9) return absl::StrFormat("%.2f G%s", per_second / 1e9, unit);
  if (a >= 1e6) return absl::StrFormat("%.2f M%s", per_second / 1e6, unit);
  if (a >= 1e3) return absl::StrFormat("%.2f k%s", per_second / 1e3, unit);
  return absl::StrFormat("%.0f %s", per_second, unit);
}

inline std::string FormatCount(double n) {
  if (n >= 1e12) return absl::StrFormat("%.2fT", n / 1e12);
  if (n >= 1e9) return absl::StrFormat("%.2fG", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.2fM", n / 1e6);
  return absl::StrFormat("%.0f", n);
}

inline std::string RankList(const std::vector<uint32_t>& ranks) {
  return absl::StrJoin(ranks, ",");
}

// Subject keys sort numerically.
inline std::string RankSubject(uint32_t rank) { return absl::StrFormat("rank %010u", rank); }
inline std::string StageSubject(uint32_t stage) { return absl::StrFormat("stage %010u", stage); }

inline v1::Alert BaseAlert(absl::string_view rule) {
  v1::Alert a;
  a.set_rule(std::string(rule));
  a.set_cause_rank(-1);
  a.set_link_src_rank(-1);
  a.set_link_dst_rank(-1);
  a.set_stage(-1);
  return a;
}

inline std::vector<const v1::DeviceStep*> CompleteDevices(const v1::StepReport& step) {
  std::vector<const v1::DeviceStep*> out;
  for (const v1::DeviceStep& d : step.devices()) {
    if (d.complete()) out.push_back(&d);
  }
  return out;
}

// The job's step time: the median of its devices' (robust to one late mark).
inline double JobStepTime(const std::vector<const v1::DeviceStep*>& devices) {
  std::vector<double> times;
  for (const v1::DeviceStep* d : devices) {
    if (d->step_time_ns() > 0) times.push_back(static_cast<double>(d->step_time_ns()));
  }
  return Median(std::move(times));
}

// The last `n` values of a window (all when shorter).
template <typename Sample, typename Field>
std::vector<double> Last(const std::deque<Sample>& window, size_t n, Field field) {
  std::vector<double> out;
  const size_t from = window.size() > n ? window.size() - n : 0;
  for (size_t i = from; i < window.size(); ++i) out.push_back(field(window[i]));
  return out;
}

// The first step of the trailing run of samples whose own test holds (the
// cause's onset), or the last step when none does.
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

}  // namespace trainscope::collector::alert_internal

#endif  // TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ALERT_ENGINE_INTERNAL_H_

// Robust summary statistics shared by the analysis (alert rules, detectors).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_STATISTICS_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_STATISTICS_H_

#include <algorithm>
#include <vector>

namespace trainscope::collector {

// The median; the mean of the two middle values for an even count; 0 when
// empty. Takes its argument by value: it reorders it.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

// The arithmetic mean; 0 when empty.
inline double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_STATISTICS_H_

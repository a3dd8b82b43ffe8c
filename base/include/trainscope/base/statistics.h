// Summary statistics shared by every layer: the collector's rules and
// detectors (medians of recent windows) and the viewer's tables (an
// operator's p50 / p95 over a selected range). The one copy of each rule.
//
// Usage:
//   double m = Median({3, 1, 2});             // 2
//   double p95 = Quantile({1, 2, 3, 4}, 0.95);  // 3.85 (linear between ranks)
//
// Threading: pure functions; safe from any thread.
#ifndef TRAINSCOPE_BASE_STATISTICS_H_
#define TRAINSCOPE_BASE_STATISTICS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace trainscope::base {

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

// The q-quantile (0 <= q <= 1, clamped) of `sorted` (ascending), linear
// between the two nearest ranks (numpy's default, so p50 is the median:
// 2.5 for {1, 2, 3, 4}); 0 when empty.
template <typename T>
double QuantileOfSorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  const double low = static_cast<double>(sorted[below]);
  return low + (static_cast<double>(sorted[above]) - low) * fraction;
}

// The same over unsorted values (sorts its copy).
template <typename T>
double Quantile(std::vector<T> v, double q) {
  std::sort(v.begin(), v.end());
  return QuantileOfSorted(v, q);
}

}  // namespace trainscope::base

#endif  // TRAINSCOPE_BASE_STATISTICS_H_

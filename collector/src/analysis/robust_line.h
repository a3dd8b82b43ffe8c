// The robust line fitting behind ClockAligner (x: a device's clock, y: the
// other clock minus it): a least-squares line over trimmed points with its
// spread and standard error. Private to the analysis library.
#ifndef TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ROBUST_LINE_H_
#define TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ROBUST_LINE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector::clock_internal {

// Ranks above this are taken for garbage, not devices.
inline constexpr uint32_t kMaxRank = 1u << 20;

// y(x) = offset + slope * (x - anchor), y being "other clock minus local".
struct Point {
  int64_t x;
  int64_t y;
};
struct LineFit {
  int64_t anchor = 0;
  int64_t offset = 0;
  double slope = 0;
  double spread = 0;       // residual standard deviation
  double uncertainty = 0;  // standard error of the line at the newest x
  int used = 0;
  int64_t newest = 0;
};

// Least-squares line over the points that survive trimming against a robust
// first line and then against the fitted line itself: one late completion
// at either end of the window has too much leverage for a plain fit.
// Drift needs a span of at least `min_span`; below it the line keeps
// `fallback_slope`.
bool FitRobustLine(const std::vector<Point>& pts, double fallback_slope, int64_t min_span,
                   double max_slope, double outlier_sigmas, LineFit* out);

// The analysis' one Median (trainscope/collector/analysis/statistics.h).
using ::trainscope::collector::Median;

inline double RootSumSquare(double a, double b) { return std::sqrt(a * a + b * b); }

}  // namespace trainscope::collector::clock_internal

#endif  // TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ROBUST_LINE_H_

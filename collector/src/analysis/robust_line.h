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
  // The points did not pin a slope down (LineRules): slope is 0 and
  // uncertainty includes what an unfitted slope could hide at the newest x.
  bool insufficient = false;
};

// When a slope is stated, and how an unstated one is accounted for (the
// reasons for ClockAligner's values are in its Options).
struct LineRules {
  int64_t min_span = 0;               // the kept points' x span
  int min_points = 3;                 // points kept (never fewer than 3)
  double max_slope = HUGE_VAL;        // |slope| above: the points follow no one line
  double max_slope_error = HUGE_VAL;  // standard error of the slope above: not known
  double outlier_sigmas = 3.5;        // trimming, in robust deviations
  // The scatter of one point, assumed while fewer than 3 points leave the
  // residuals too few degrees of freedom to say.
  double prior_spread = 0;
  double unfitted_slope = 0;  // the slope an unstated one may be, for the uncertainty
};

// Least-squares line over the points that survive trimming against a robust
// first line and then against the fitted line itself: one late completion
// at either end of the window has too much leverage for a plain fit. A slope
// that breaks `rules` is not clamped: the line is flat through the points'
// mean and says insufficient.
bool FitRobustLine(const std::vector<Point>& pts, const LineRules& rules, LineFit* out);

// The analysis' one Median (trainscope/collector/analysis/statistics.h).
using ::trainscope::collector::Median;

inline double RootSumSquare(double a, double b) { return std::sqrt(a * a + b * b); }

}  // namespace trainscope::collector::clock_internal

#endif  // TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_ROBUST_LINE_H_

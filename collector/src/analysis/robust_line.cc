#include "robust_line.h"

#include <algorithm>
#include <cmath>

namespace trainscope::collector::clock_internal {
namespace {

// Keeps the points within `sigmas` robust deviations (MAD) of the residuals'
// median; false when every point stays.
bool Trim(const std::vector<double>& residuals, double sigmas, std::vector<char>* keep,
          size_t* kept) {
  std::vector<double> v;
  v.reserve(residuals.size());
  for (size_t i = 0; i < residuals.size(); ++i) {
    if ((*keep)[i]) v.push_back(residuals[i]);
  }
  const double centre = Median(v);
  for (double& r : v) r = std::fabs(r - centre);
  // 1 us floor: exact synthetic data must not trim on rounding.
  const double cutoff = std::max(sigmas * 1.4826 * Median(v), 1'000.0);
  size_t count = 0;
  for (size_t i = 0; i < residuals.size(); ++i) {
    (*keep)[i] = std::fabs(residuals[i] - centre) <= cutoff;
    count += (*keep)[i];
  }
  const bool changed = count != *kept;
  *kept = count;
  return changed;
}

}  // namespace

bool FitRobustLine(const std::vector<Point>& pts, const LineRules& rules, LineFit* out) {
  const size_t n = pts.size();
  if (n == 0) return false;
  const int64_t x_base = pts[0].x;
  const int64_t y_base = pts[0].y;
  std::vector<char> keep(n, 1);
  std::vector<double> residuals(n);
  size_t kept = n;
  constexpr size_t kMinTrim = 4;
  if (n >= kMinTrim) {
    // A first line robust to late completions anywhere in the window: the
    // median slope over all pairs (Theil-Sen) while the window is short and
    // outliers weigh most, over pairs half a window apart after that. Only
    // for trimming: an implausible one trims around a flat line instead.
    std::vector<double> slopes;
    constexpr size_t kAllPairsUpTo = 32;
    auto add = [&](size_t i, size_t j) {
      const int64_t dx = pts[j].x - pts[i].x;
      if (dx != 0) slopes.push_back(static_cast<double>(pts[j].y - pts[i].y) / dx);
    };
    if (n <= kAllPairsUpTo) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = i + 1; j < n; ++j) add(i, j);
      }
    } else {
      for (size_t i = 0; i + n / 2 < n; ++i) add(i, i + n / 2);
    }
    double slope0 = slopes.empty() ? 0 : Median(slopes);
    if (!(std::fabs(slope0) <= rules.max_slope)) slope0 = 0;
    for (size_t i = 0; i < n; ++i) {
      residuals[i] =
          static_cast<double>(pts[i].y - y_base) - slope0 * static_cast<double>(pts[i].x - x_base);
    }
    Trim(residuals, rules.outlier_sigmas, &keep, &kept);
  }
  const size_t min_points = static_cast<size_t>(std::max(rules.min_points, 3));
  double mx = 0, my = 0, sxx = 0, slope = 0, intercept = 0;
  bool slope_fitted = false;
  for (int pass = 0; pass < 2; ++pass) {
    mx = my = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      mx += static_cast<double>(pts[i].x - x_base);
      my += static_cast<double>(pts[i].y - y_base);
      lo = std::min(lo, pts[i].x);
      hi = std::max(hi, pts[i].x);
    }
    mx /= static_cast<double>(kept);
    my /= static_cast<double>(kept);
    sxx = 0;
    double sxy = 0, syy = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      const double dx = static_cast<double>(pts[i].x - x_base) - mx;
      const double dy = static_cast<double>(pts[i].y - y_base) - my;
      sxx += dx * dx;
      sxy += dx * dy;
      syy += dy * dy;
    }
    slope_fitted = false;
    slope = 0;
    if (kept >= min_points && hi - lo >= rules.min_span && sxx > 0) {
      const double raw = sxy / sxx;
      // Residual sum of squares of the fitted line, and the slope's
      // standard error from it.
      const double ss = std::max(syy - raw * sxy, 0.0);
      const double slope_error = std::sqrt(ss / static_cast<double>(kept - 2) / sxx);
      slope_fitted = std::fabs(raw) <= rules.max_slope && slope_error <= rules.max_slope_error;
      if (slope_fitted) slope = raw;
    }
    intercept = my - slope * mx;
    for (size_t i = 0; i < n; ++i) {
      residuals[i] = static_cast<double>(pts[i].y - y_base) -
                     (intercept + slope * static_cast<double>(pts[i].x - x_base));
    }
    if (pass == 1 || n < kMinTrim) break;
    if (!Trim(residuals, rules.outlier_sigmas, &keep, &kept)) break;
  }
  const int params = slope_fitted ? 2 : 1;
  double ss = 0;
  int64_t newest = INT64_MIN;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    ss += residuals[i] * residuals[i];
    newest = std::max(newest, pts[i].x);
  }
  const double dof = static_cast<double>(kept) - params;
  out->spread = dof > 0 ? std::sqrt(ss / dof) : 0;
  const double k = static_cast<double>(kept);
  const double lever = static_cast<double>(newest - x_base) - mx;
  if (slope_fitted) {
    out->uncertainty = out->spread * std::sqrt(1 / k + lever * lever / sxx);
  } else {
    // The mean's standard error (the assumed scatter while the residuals
    // have under 2 degrees of freedom), and the offset an unfitted slope
    // could build up between the points' mean and the newest one.
    const double scatter = kept >= 3 ? out->spread : std::max(out->spread, rules.prior_spread);
    out->uncertainty = RootSumSquare(scatter / std::sqrt(k), rules.unfitted_slope * lever);
  }
  out->anchor = x_base + std::llround(mx);
  out->offset = y_base + std::llround(my);  // the line passes through the means
  out->slope = slope;
  out->used = static_cast<int>(kept);
  out->newest = newest;
  out->insufficient = !slope_fitted;
  return true;
}

}  // namespace trainscope::collector::clock_internal

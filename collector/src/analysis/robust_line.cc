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

bool FitRobustLine(const std::vector<Point>& pts, double fallback_slope, int64_t min_span,
                   double max_slope, double outlier_sigmas, LineFit* out) {
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
    // outliers weigh most, over pairs half a window apart after that.
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
    const double slope0 =
        slopes.empty() ? fallback_slope : std::clamp(Median(slopes), -max_slope, max_slope);
    for (size_t i = 0; i < n; ++i) {
      residuals[i] =
          static_cast<double>(pts[i].y - y_base) - slope0 * static_cast<double>(pts[i].x - x_base);
    }
    Trim(residuals, outlier_sigmas, &keep, &kept);
  }
  double mx = 0, my = 0, sxx = 0, slope = fallback_slope, intercept = 0;
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
    double sxy = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      const double dx = static_cast<double>(pts[i].x - x_base) - mx;
      const double dy = static_cast<double>(pts[i].y - y_base) - my;
      sxx += dx * dx;
      sxy += dx * dy;
    }
    slope_fitted = kept >= 3 && hi - lo >= min_span && sxx > 0;
    slope = slope_fitted ? std::clamp(sxy / sxx, -max_slope, max_slope) : fallback_slope;
    intercept = my - slope * mx;
    for (size_t i = 0; i < n; ++i) {
      residuals[i] = static_cast<double>(pts[i].y - y_base) -
                     (intercept + slope * static_cast<double>(pts[i].x - x_base));
    }
    if (pass == 1 || n < kMinTrim) break;
    if (!Trim(residuals, outlier_sigmas, &keep, &kept)) break;
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
  if (slope_fitted) {
    const double dxn = static_cast<double>(newest - x_base) - mx;
    out->uncertainty = out->spread * std::sqrt(1 / k + dxn * dxn / sxx);
  } else {
    out->uncertainty = out->spread / std::sqrt(k);
  }
  out->anchor = x_base + std::llround(mx);
  out->offset = y_base + std::llround(my);  // the line passes through the means
  out->slope = slope;
  out->used = static_cast<int>(kept);
  out->newest = newest;
  return true;
}

}  // namespace trainscope::collector::clock_internal

#include "trainscope/collector/analysis/alert_format.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace trainscope::collector {

std::string FormatNs(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return absl::StrFormat("%.2f s", ns / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.1f ms", ns / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.0f us", ns / 1e3);
  return absl::StrFormat("%.0f ns", ns);
}

std::string FormatRate(double per_second, absl::string_view unit) {
  const double a = std::fabs(per_second);
  if (a >= 1e12) return absl::StrFormat("%.2f T%s", per_second / 1e12, unit);
  if (a >= 1e9) return absl::StrFormat("%.2f G%s", per_second / 1e9, unit);
  if (a >= 1e6) return absl::StrFormat("%.2f M%s", per_second / 1e6, unit);
  if (a >= 1e3) return absl::StrFormat("%.2f k%s", per_second / 1e3, unit);
  return absl::StrFormat("%.0f %s", per_second, unit);
}

std::string FormatCount(double n) {
  if (n >= 1e12) return absl::StrFormat("%.2fT", n / 1e12);
  if (n >= 1e9) return absl::StrFormat("%.2fG", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.2fM", n / 1e6);
  return absl::StrFormat("%.0f", n);
}

std::string RankList(const std::vector<uint32_t>& ranks) { return absl::StrJoin(ranks, ","); }

}  // namespace trainscope::collector

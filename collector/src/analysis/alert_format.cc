#include "trainscope/collector/analysis/alert_format.h"

#include "absl/strings/str_join.h"
#include "trainscope/base/number_format.h"

namespace trainscope::collector {

// The rule (unit, three significant digits) is base's, shared with the CLI
// and the viewer; alert messages keep ASCII "us".
std::string FormatNs(double ns) { return base::FormatDuration(ns); }

std::string FormatRate(double per_second, absl::string_view unit) {
  return base::FormatSi(per_second, std::string_view(unit.data(), unit.size()));
}

std::string FormatCount(double n) {
  return base::FormatSi(n, "", {.separator = ""}, /*whole=*/true);
}

std::string RankList(const std::vector<uint32_t>& ranks) { return absl::StrJoin(ranks, ","); }

}  // namespace trainscope::collector

// How alert messages write their figures: durations, rates, counts and rank
// lists, in the short forms docs/alerts.md quotes ("41.0 ms", "1.20 GFLOPS",
// "2.50G", "0,2,3"). Every rule formats through these, so that one figure
// reads the same in every message; the figures follow base's one rule
// (trainscope/base/number_format.h: three significant digits), like the CLI's
// and the viewer's.
//
// Usage:
//   absl::StrFormat("own time %s vs peers' %s", FormatNs(mine), FormatNs(median));
//
// Threading: pure functions; safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_FORMAT_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace trainscope::collector {

// "2.00 s", "41.0 ms", "350 us", "12.0 ns".
std::string FormatNs(double ns);
// `per_second` with an SI prefix before `unit`: "1.20 GFLOPS", "800 B/s".
std::string FormatRate(double per_second, absl::string_view unit);
// A count with an SI suffix: "2.50T", "1.20G", "3.00M", "1.50k", "999".
std::string FormatCount(double n);
// "0,2,3".
std::string RankList(const std::vector<uint32_t>& ranks);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_FORMAT_H_

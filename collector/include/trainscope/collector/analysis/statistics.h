// Robust summary statistics shared by the analysis (alert rules, detectors):
// base's, named in the collector's namespace so the rules call them
// unqualified. The rules themselves live in trainscope/base/statistics.h.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_STATISTICS_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_STATISTICS_H_

#include "trainscope/base/statistics.h"

namespace trainscope::collector {

using ::trainscope::base::Mean;
using ::trainscope::base::Median;

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_STATISTICS_H_

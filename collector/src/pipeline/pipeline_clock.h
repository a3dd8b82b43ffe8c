// The collector's wall clock as the job pipeline stamps records and alerts.
// Private to the pipeline's sources.
#ifndef TRAINSCOPE_COLLECTOR_SRC_PIPELINE_PIPELINE_CLOCK_H_
#define TRAINSCOPE_COLLECTOR_SRC_PIPELINE_PIPELINE_CLOCK_H_

#include <cstdint>

#include "absl/time/clock.h"

namespace trainscope::collector {

inline int64_t NowUnixNs() { return absl::ToUnixNanos(absl::Now()); }

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_PIPELINE_PIPELINE_CLOCK_H_

// How the collector's adapters (ListJobs, /metrics) read the NATS tier's
// role and counters without depending on tier/: main sets a callback that
// calls TierRole::FillStatus. Must be callable from any thread.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_TIER_STATUS_PROVIDER_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_TIER_STATUS_PROVIDER_H_

#include <functional>

#include "trainscope/v1/commands.pb.h"

namespace trainscope::collector {

// Leaves the status untouched (node and job_level false) when there is no tier.
using TierStatusProvider = std::function<void(trainscope::v1::TierStatus*)>;

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_TIER_STATUS_PROVIDER_H_

// The reduced form of an EventBatch that node collectors publish with
// --publish-events=summary (docs/scale.md): only what the job-wide view needs
// across hosts — step marks (step boundaries), collectives (CPU and GPU:
// alignment, waits, traffic per link) — plus every loss report and the drop
// counters, with the string table compacted to the names they use.
//
// Usage:
//   v1::EventBatch small = SummaryBatch(batch);   // same sequence, fewer events
//
// Threading: pure function.
#ifndef TRAINSCOPE_TIER_SUMMARY_BATCH_H_
#define TRAINSCOPE_TIER_SUMMARY_BATCH_H_

#include "trainscope/v1/agent.pb.h"

namespace trainscope::tier {

// Whether SummaryBatch keeps events of `kind`.
bool KeptInSummary(int kind);

// `batch` with only the events KeptInSummary keeps, their columns (common,
// collective and GPU) and timestamps intact. `batch` must satisfy the column
// rule (protocol::CheckEventBatchColumns): the collector validated it.
trainscope::v1::EventBatch SummaryBatch(const trainscope::v1::EventBatch& batch);

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_SUMMARY_BATCH_H_

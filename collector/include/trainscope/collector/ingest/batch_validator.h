// Checks every EventBatch of one agent stream before it is logged.
//
// Usage (one instance per stream, owned by its AgentSession):
//   BatchValidator validator(hello.world_size());
//   absl::Status s = validator.Validate(batch);  // on success the batch's
//                                               // per-thread times are kept
//
// Checks: event count in 1..max_events (0 when the batch carries loss
// reports, which ValidateLossReports checks); every common column (kind ..
// value) has one entry per event and every collective column (group,
// group_sequence, peer) one per collective event; string indices in range and
// strings bounded; known kinds and details; durations under max_duration_ns;
// peers below the world size; and per recording thread, completion times
// (start + duration) never go backwards, across batches too (phase marks
// excepted: they may be recorded after the span they close). A refused batch
// leaves the per-thread state as it was.
//
// Messages name the batch, the field and the expectation, e.g.
//   "batch 12: column duration_ns has 99 entries, expected 100 (one per event)".
// Threading: not thread-safe; one stream's owner calls it.
#ifndef TRAINSCOPE_COLLECTOR_INGEST_BATCH_VALIDATOR_H_
#define TRAINSCOPE_COLLECTOR_INGEST_BATCH_VALIDATOR_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

struct BatchLimits {
  uint32_t max_events = 1u << 20;
  uint32_t max_string_bytes = 64u << 10;
  uint64_t max_duration_ns = 86'400'000'000'000ull;  // one day
};

class BatchValidator {
 public:
  explicit BatchValidator(uint32_t world_size, BatchLimits limits = {});

  absl::Status Validate(const trainscope::v1::EventBatch& batch);

  // Completion time of the last accepted event of `thread`, if any.
  bool LastTime(uint32_t thread, int64_t* time_ns) const;

 private:
  const uint32_t world_size_;
  const BatchLimits limits_;
  // Keyed by OS thread id, or for device work by (1 << 63 | device << 32 | stream).
  absl::flat_hash_map<uint64_t, int64_t> last_end_by_thread_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_BATCH_VALIDATOR_H_

// Cuts an encoded EventBatch into consecutive batches that each fit the
// collector's message limit (HelloAck.max_message_bytes), so an agent facing
// a collector with a small --max-message-bytes delivers every event instead
// of having each oversized stream write cut off by gRPC.
//
// Usage (sender thread):
//   BatchSplit split = SplitBatch(std::move(batch), max_bytes);
//   for (v1::EventBatch& piece : split.batches) ...queue piece...
//   count split.events_too_large as dropped (a single event over the limit)
//
// Each piece decodes alone: its own string table (index 0 is ""), its own
// base_time_ns (the start of the previous piece's last event, so the deltas
// stay as they were), the collective and GPU columns of its events only, and
// the batch's drop counters; loss reports stay with the first piece. Pieces
// are cut in halves, so a batch of n events costs O(n log n) to split. The
// sequence is left as it was: the caller numbers the pieces.
//
// Threading: a pure function.
#ifndef TRAINSCOPE_AGENT_SRC_BATCH_SPLITTER_H_
#define TRAINSCOPE_AGENT_SRC_BATCH_SPLITTER_H_

#include <cstdint>
#include <vector>

#include "trainscope/v1/agent.pb.h"

namespace trainscope::agent {

// Bytes an AgentMessage adds around its batch, plus a sequence number set
// after splitting: the limit applies to the whole message on the wire.
inline constexpr uint64_t kBatchFramingBytes = 32;

struct BatchSplit {
  std::vector<v1::EventBatch> batches;  // in event order; each ByteSizeLong() <= the limit
  // Events that alone make a batch over the limit (its strings are too long
  // for it): left out, for the caller to count as dropped.
  uint64_t events_too_large = 0;
};

// `max_bytes`: the largest serialized EventBatch allowed (the collector's
// message limit minus kBatchFramingBytes). A batch without events (loss
// reports only) is returned whole: it cannot be cut by event.
BatchSplit SplitBatch(v1::EventBatch batch, uint64_t max_bytes);

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_BATCH_SPLITTER_H_

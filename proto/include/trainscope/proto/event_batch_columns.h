// The column rule of trainscope.v1.EventBatch: each per-event column
// (start_delta_ns, duration_ns, name, thread, detail, value) has one entry
// per event (kind), each collective column (group, group_sequence, peer) one
// per collective event (CPU or GPU), each GPU column (gpu_device ..
// gpu_launch_op) one per GPU event. One copy for everything that reads a batch: the
// collector's validator, the analysis and the agent's decoder.
//
// Usage:
//   RETURN_IF_ERROR(protocol::CheckEventBatchColumns(batch, "EventBatch."));
//   // every column may now be indexed by event (or collective event) number
//
// Threading: pure functions.
#ifndef TRAINSCOPE_PROTO_EVENT_BATCH_COLUMNS_H_
#define TRAINSCOPE_PROTO_EVENT_BATCH_COLUMNS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::protocol {

// Whether events of `kind` have an entry in the collective columns
// (EVENT_KIND_COLLECTIVE, EVENT_KIND_GPU_COLLECTIVE) ... Inline: the
// agent's encoder asks for every event it sends.
inline bool IsCollectiveKind(int kind) {
  return kind == v1::EVENT_KIND_COLLECTIVE || kind == v1::EVENT_KIND_GPU_COLLECTIVE;
}
// ... and in the GPU columns (EVENT_KIND_GPU_KERNEL .. GPU_COLLECTIVE).
inline bool IsGpuKind(int kind) {
  return kind >= v1::EVENT_KIND_GPU_KERNEL && kind <= v1::EVENT_KIND_GPU_COLLECTIVE;
}

// How many of the batch's events have collective columns.
int CountCollectives(const v1::EventBatch& batch);
// How many have GPU columns.
int CountGpuEvents(const v1::EventBatch& batch);

// OK, or INVALID_ARGUMENT for the first column of the wrong length, written
// `<column_prefix><column> has N entries, expected M (one per event)` (or
// "(one per collective event)"); `*bad_column`, when given, is set to the
// column's name.
absl::Status CheckEventBatchColumns(const v1::EventBatch& batch,
                                    absl::string_view column_prefix = "column ",
                                    std::string* bad_column = nullptr);

}  // namespace trainscope::protocol

#endif  // TRAINSCOPE_PROTO_EVENT_BATCH_COLUMNS_H_

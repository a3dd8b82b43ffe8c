// Turns a trainscope.v1.EventBatch back into events, checking its columns.
//
// Usage:
//   absl::StatusOr<std::vector<DecodedEvent>> events = DecodeEventBatch(batch);
//
// The inverse of the agent's batch encoder: absolute start times from
// base_time_ns and the deltas, names and groups resolved through the batch's
// own string table, collective columns matched to collective events in order.
// A malformed batch gives INVALID_ARGUMENT naming the column and what was
// expected. Meant for tests, tools and replay; the collector validates on its own.
//
// Threading: a pure function.
#ifndef TRAINSCOPE_AGENT_EVENT_BATCH_DECODER_H_
#define TRAINSCOPE_AGENT_EVENT_BATCH_DECODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::agent {

struct DecodedEvent {
  EventKind kind = EventKind::kUnspecified;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // start_ns + duration_ns
  uint64_t value = 0;
  uint32_t detail = 0;
  uint32_t thread = 0;
  std::string name;
  // Collective events only.
  std::string group;
  uint64_t group_sequence = 0;
  int32_t peer = -1;
  // GPU events only.
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
  uint64_t correlation = 0;  // 0: launch unknown
  int64_t launch_ns = 0;
  std::string launch_op;

  bool operator==(const DecodedEvent&) const = default;
};

absl::StatusOr<std::vector<DecodedEvent>> DecodeEventBatch(const v1::EventBatch& batch);

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_EVENT_BATCH_DECODER_H_

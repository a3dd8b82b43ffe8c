// Checks the first message of an agent stream before it touches any state.
//
// Usage:
//   if (absl::Status s = ValidateHello(hello); !s.ok()) return s;  // tell the agent
//
// Every error names the field and what was expected, e.g.
//   "hello.rank: 7 is not below hello.world_size 4".
// Statuses are tagged with a BadInput cause (the field name).
// Threading: pure functions.
#ifndef TRAINSCOPE_COLLECTOR_INGEST_HELLO_VALIDATOR_H_
#define TRAINSCOPE_COLLECTOR_INGEST_HELLO_VALIDATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/proto/job_id.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

inline constexpr uint32_t kMaxWorldSize = 1u << 20;
inline constexpr size_t kMaxJobTokenLength = 256;

// The protocol's job id rule (trainscope/proto/job_id.h).
using ::trainscope::protocol::IsValidJobId;

// protocol::ValidateJobId tagged with a BadInput cause (`field`).
absl::Status ValidateJobId(absl::string_view job_id, absl::string_view field);

// FAILED_PRECONDITION when the agent's protocol versions and this
// collector's do not meet (protocol::NegotiateProtocolVersion),
// INVALID_ARGUMENT for any other bad field.
absl::Status ValidateHello(const trainscope::v1::Hello& hello);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_HELLO_VALIDATOR_H_

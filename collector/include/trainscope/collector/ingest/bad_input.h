// Statuses for bad input from a peer, tagged with a short stable cause.
//
// Usage:
//   return BadInput(absl::StatusCode::kInvalidArgument, "hello.rank",
//                   "hello.rank: 7 is not below hello.world_size 4");
//   ...
//   counters.Count(status, who);  // counted under BadInputCause(status) == "hello.rank"
//
// The cause lets BadInputCounters count and rate-limit per kind of mistake
// without parsing human-readable messages. Threading: pure functions.
#ifndef TRAINSCOPE_COLLECTOR_INGEST_BAD_INPUT_H_
#define TRAINSCOPE_COLLECTOR_INGEST_BAD_INPUT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace trainscope::collector {

// A status with `code` and `message`, tagged with `cause` (e.g. "hello.rank").
absl::Status BadInput(absl::StatusCode code, absl::string_view cause, absl::string_view message);

// The cause `status` was tagged with by BadInput; for an untagged status, the
// lower-case name of its code (e.g. "invalid_argument").
std::string BadInputCause(const absl::Status& status);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_BAD_INPUT_H_

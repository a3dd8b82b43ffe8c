// The job id rule of the wire protocol: what Hello.job_id, the commands and
// every tool accept as the name of a job. One rule for the agent, the
// collector and the CLI, because a job id names a directory under
// <data-dir>/jobs: "." and ".." would escape it.
//
// Usage:
//   if (!protocol::IsValidJobId(name)) ...
//   RETURN_IF_ERROR(protocol::ValidateJobId(options.job_id, "job_id"));
//
// Threading: pure functions.
#ifndef TRAINSCOPE_PROTO_JOB_ID_H_
#define TRAINSCOPE_PROTO_JOB_ID_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace trainscope::protocol {

inline constexpr size_t kMaxJobIdLength = 128;

// Whether `job_id` matches [A-Za-z0-9._-]{1,128} and is not "." or "..".
bool IsValidJobId(absl::string_view job_id);

// OK for a valid job id, else INVALID_ARGUMENT naming `what` (the field or
// flag it came from), the id (its first 64 bytes) and what is expected, e.g.
//   "job_id: '..' (2 bytes) is not a valid job id; expected 1 to 128
//    characters from [A-Za-z0-9._-], not '.' or '..'".
absl::Status ValidateJobId(absl::string_view job_id, absl::string_view what);

}  // namespace trainscope::protocol

#endif  // TRAINSCOPE_PROTO_JOB_ID_H_

// A job's token: the secret that commands changing the job must carry.
//
// Stored as <job dir>/token (one line, mode 0600) so that it survives a
// collector restart and the job's owner can read it; a marker file
// <job dir>/token.generated says the collector made it up (then ranks that
// present no token are still accepted).
//
// Threading: pure functions plus file I/O; call from the job's pipeline.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainscope::collector {

struct JobToken {
  std::string value;       // empty: the job has none yet
  bool generated = false;  // made up by the collector, not set by the job
};

// 128 random bits as 32 lower-case hex digits.
std::string GenerateJobToken();

// Writes `token` to <job_dir>/token with mode 0600 (atomically, durably).
absl::Status WriteJobToken(const std::filesystem::path& job_dir, const JobToken& token);

// The token stored in `job_dir`; an empty value when there is none.
absl::StatusOr<JobToken> ReadJobToken(const std::filesystem::path& job_dir);

// Compares in time independent of where the strings differ.
bool TokensEqual(absl::string_view a, absl::string_view b);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_H_

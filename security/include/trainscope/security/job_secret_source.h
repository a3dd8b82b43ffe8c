// Finds the membership secret a rank of a job presents in its Hello when
// nobody passed it a token explicitly, so that a collector with a job key
// (the default, docs/security.md "Who belongs to a job") admits the ranks of
// the common paths without configuration:
//
//   1. TRAINSCOPE_JOB_SECRET: the job's secret itself (`trainscope run` and
//      `attach` hand it to their ranks as TRAINSCOPE_TOKEN, which the agents'
//      callers read before this);
//   2. TRAINSCOPE_JOB_SECRET_FILE: a file whose first line is the secret (what
//      an operator distributes to ranks started by separate launchers);
//   3. TRAINSCOPE_JOB_KEY_FILE: the collector's job key, from which the secret
//      of this job id is derived (a launcher that did not know the job id);
//   4. the default job key, DefaultKeyPath(), when it exists and can be read:
//      a process of the user the collector runs as (who could read the key
//      anyway) proves membership with no configuration at all.
//
// Explicit sources (1-3) that cannot be read are errors naming the variable;
// the default key is skipped when absent or unreadable (another user's
// process simply has no proof and is refused by the collector).
//
// Usage:
//   ASSIGN_OR_RETURN(std::optional<JobSecretSource::Found> found,
//                    JobSecretSource::Resolve(job_id, JobSecretSource::ProcessEnv()));
//   if (found.has_value()) hello.set_job_token(found->secret);
//
// Threading: stateless; reads files on the calling thread.
#ifndef TRAINSCOPE_SECURITY_JOB_SECRET_SOURCE_H_
#define TRAINSCOPE_SECURITY_JOB_SECRET_SOURCE_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainscope::security {

class JobSecretSource {
 public:
  // A variable's value, or nullopt when unset or empty (client::EnvLookup).
  using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

  struct Found {
    std::string secret;
    std::string source;  // where it came from, for messages ("TRAINSCOPE_JOB_SECRET_FILE /x")
  };

  // The process's environment (getenv).
  static EnvLookup ProcessEnv();

  // Where the collector keeps its job key unless told otherwise:
  // $XDG_CONFIG_HOME/trainscope/job.key, else $HOME/.config/trainscope/job.key;
  // nullopt when neither variable is set.
  static std::optional<std::string> DefaultKeyPath(const EnvLookup& env);

  // The secret of `job_id` from the sources above, first found wins; nullopt
  // when none applies.
  static absl::StatusOr<std::optional<Found>> Resolve(std::string_view job_id,
                                                      const EnvLookup& env);
};

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_JOB_SECRET_SOURCE_H_

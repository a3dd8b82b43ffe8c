// Keeps a job's token, the secret that commands changing the job carry: the
// first rank fixes it (presenting one, or getting one the collector makes
// up), every later rank and every command is checked against it.
//
// Usage:
//   JobTokenKeeper keeper(job_id, job_dir, ReadJobToken(job_dir).value());
//   absl::StatusOr<JobTokenKeeper::Admission> admitted =
//       keeper.AdmitRank(hello.job_token(), /*rank_seen=*/table.ranks().contains(rank));
//   if (!admitted.ok()) refuse the hello; else send admitted->ack_token in the HelloAck
//   if (absl::Status s = keeper.AuthorizeCommand(command.token); !s.ok()) refuse
//
// A generated token is written to <job_dir>/token (mode 0600). Membership
// (docs/security.md): a job with a token its first rank presented admits
// only ranks presenting it. A job whose token the collector generated (no
// rank had one: the zero-configuration path) admits a rank that presents
// none only on its first stream, and sends it the token in the HelloAck; a
// reconnect or a restarted incarnation of a rank the job has seen must
// present it (the agent keeps it from its HelloAck; a launcher passes it as
// TRAINSCOPE_TOKEN), so no process can take over a rank's stream without it.
// Commands always need it.
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_KEEPER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_KEEPER_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/pipeline/job_token.h"

namespace trainscope::collector {

class JobTokenKeeper {
 public:
  JobTokenKeeper(std::string job_id, std::filesystem::path job_dir, JobToken token)
      : job_id_(std::move(job_id)), job_dir_(std::move(job_dir)), token_(std::move(token)) {}

  struct Admission {
    // For the HelloAck: the generated token, sent to a rank that presented
    // none ("" when it presented the job's token).
    std::string ack_token;
    bool generated = false;  // this hello made the collector generate it
  };
  // Checks a hello's token (fixing the job's on its first rank). `rank_seen`:
  // the job has had a stream of this rank before (a reconnect, a restart or a
  // takeover attempt). Returns PERMISSION_DENIED naming hello.job_token, or
  // UNAVAILABLE when a new token cannot be stored.
  absl::StatusOr<Admission> AdmitRank(absl::string_view presented, bool rank_seen, uint32_t rank);

  // OK when `presented` is the job's token; FAILED_PRECONDITION while the job
  // has none, PERMISSION_DENIED naming command.token otherwise.
  absl::Status AuthorizeCommand(absl::string_view presented) const;

  std::filesystem::path token_path() const { return job_dir_ / "token"; }

 private:
  const std::string job_id_;
  const std::filesystem::path job_dir_;
  JobToken token_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_KEEPER_H_

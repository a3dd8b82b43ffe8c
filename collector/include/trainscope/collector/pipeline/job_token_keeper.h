// Keeps a job's token, the secret that commands changing the job carry: the
// first rank fixes it (presenting one, or getting one the collector makes
// up), every later rank and every command is checked against it.
//
// Usage:
//   JobTokenKeeper keeper(job_id, job_dir, ReadJobToken(job_dir).value());
//   absl::StatusOr<std::string> generated = keeper.AdmitRank(hello.job_token());
//   if (!generated.ok()) refuse the hello; else send *generated (maybe empty) in the HelloAck
//   if (absl::Status s = keeper.AuthorizeCommand(command.token); !s.ok()) refuse
//
// A generated token is written to <job_dir>/token (mode 0600) and sent to the
// rank whose hello created it; ranks that present no token are then still
// admitted, commands never are.
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_KEEPER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_TOKEN_KEEPER_H_

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

  // Checks a hello's token (fixing the job's on its first rank). Returns the
  // token the collector generated for this rank ("" when none), or
  // PERMISSION_DENIED naming hello.job_token, or UNAVAILABLE when a new
  // token cannot be stored.
  absl::StatusOr<std::string> AdmitRank(absl::string_view presented);

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

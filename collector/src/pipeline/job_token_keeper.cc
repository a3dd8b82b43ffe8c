#include "trainscope/collector/pipeline/job_token_keeper.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {

absl::StatusOr<JobTokenKeeper::Admission> JobTokenKeeper::AdmitRank(absl::string_view presented,
                                                                    bool rank_seen, uint32_t rank) {
  if (token_.value.empty()) {
    JobToken token{presented.empty() ? GenerateJobToken() : std::string(presented),
                   presented.empty()};
    if (absl::Status s = WriteJobToken(job_dir_, token); !s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("job ", job_id_, ": cannot store the job token: ", s.message()));
    }
    token_ = std::move(token);
    if (!token_.generated) return Admission{};
    return Admission{token_.value, /*generated=*/true};
  }
  if (presented.empty()) {
    if (!token_.generated) {
      return BadInput(
          absl::StatusCode::kPermissionDenied, "hello.job_token",
          absl::StrCat("job ", job_id_, ": missing job token (hello.job_token of rank ", rank,
                       "); the job set one "
                       "when its first rank attached and every rank must present "
                       "it (pass it as TRAINSCOPE_TOKEN or --token)"));
    }
    if (rank_seen) {
      // Without proof a reconnect or restart would let any local process
      // replace the rank's stream and inject events in its name.
      return BadInput(
          absl::StatusCode::kPermissionDenied, "hello.job_token",
          absl::StrCat("job ", job_id_, ": rank ", rank,
                       " has connected before; a reconnect or restart of a rank must "
                       "prove it belongs to the job with the job's token (sent in "
                       "every HelloAck; stored in ",
                       token_path().string(), "): pass it as TRAINSCOPE_TOKEN or --token"));
    }
    return Admission{token_.value, /*generated=*/false};
  }
  if (!TokensEqual(presented, token_.value)) {
    return BadInput(absl::StatusCode::kPermissionDenied, "hello.job_token",
                    absl::StrCat("job ", job_id_, ": wrong job token (hello.job_token of rank ",
                                 rank, " does not match the token the job attached with)"));
  }
  return Admission{};
}

absl::Status JobTokenKeeper::AuthorizeCommand(absl::string_view presented) const {
  if (token_.value.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id_,
                     " has no token on record yet (no rank has attached), so it "
                     "cannot be changed"));
  }
  if (presented.empty()) {
    return BadInput(absl::StatusCode::kPermissionDenied, "command.token",
                    absl::StrCat("job ", job_id_,
                                 ": missing job token; commands that change a "
                                 "job must carry the token the job attached with "
                                 "(or the one the collector generated, in ",
                                 token_path().string(), ")"));
  }
  if (!TokensEqual(presented, token_.value)) {
    return BadInput(absl::StatusCode::kPermissionDenied, "command.token",
                    absl::StrCat("job ", job_id_, ": wrong job token"));
  }
  return absl::OkStatus();
}

}  // namespace trainscope::collector

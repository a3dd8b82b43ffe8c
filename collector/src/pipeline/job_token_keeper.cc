#include "trainscope/collector/pipeline/job_token_keeper.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {

absl::StatusOr<std::string> JobTokenKeeper::AdmitRank(absl::string_view presented) {
  if (token_.value.empty()) {
    JobToken token{presented.empty() ? GenerateJobToken() : std::string(presented),
                   presented.empty()};
    if (absl::Status s = WriteJobToken(job_dir_, token); !s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("job ", job_id_, ": cannot store the job token: ", s.message()));
    }
    token_ = std::move(token);
    return token_.generated ? token_.value : std::string();
  }
  if (presented.empty()) {
    if (token_.generated) return std::string();
    return BadInput(absl::StatusCode::kPermissionDenied, "hello.job_token",
                    absl::StrCat("job ", job_id_,
                                 ": missing job token (hello.job_token); the job set one "
                                 "when its first rank attached and every rank must present it"));
  }
  if (!TokensEqual(presented, token_.value)) {
    return BadInput(absl::StatusCode::kPermissionDenied, "hello.job_token",
                    absl::StrCat("job ", job_id_,
                                 ": wrong job token (hello.job_token does not "
                                 "match the token the job attached with)"));
  }
  return std::string();
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

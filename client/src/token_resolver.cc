#include "trainscope/client/token_resolver.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "trainscope/security/job_secret_source.h"

namespace trainscope::client {

absl::StatusOr<std::string> TokenResolver::ReadTokenFile(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path.string(), " does not exist or is not a regular file"));
  }
  std::ifstream in(path);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("cannot read token file ", path.string()));
  std::string line;
  std::getline(in, line);
  std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", path.string(), " is empty (expected the token on its first line)"));
  }
  return token;
}

absl::StatusOr<ResolvedToken> TokenResolver::Resolve(const std::string& job_id,
                                                     const Sources& sources) {
  if (sources.flag.has_value()) {
    if (sources.flag->empty()) return absl::InvalidArgumentError("--token is empty");
    return ResolvedToken{*sources.flag, "--token"};
  }
  if (sources.file.has_value()) {
    absl::StatusOr<std::string> token = ReadTokenFile(*sources.file);
    if (!token.ok()) return token.status();
    return ResolvedToken{*std::move(token), absl::StrCat("--token-file ", sources.file->string())};
  }
  if (sources.env.has_value() && !sources.env->empty()) {
    return ResolvedToken{*sources.env, "TRAINSCOPE_TOKEN"};
  }
  if (sources.data_dir.has_value()) {
    const std::filesystem::path path = *sources.data_dir / "jobs" / job_id / "token";
    absl::StatusOr<std::string> token = ReadTokenFile(path);
    if (!token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          token.status().message(),
          " (the collector writes it there only when it generated the job's token; otherwise "
          "pass the token the job set with --token, --token-file or TRAINSCOPE_TOKEN)"));
    }
    return ResolvedToken{*std::move(token), absl::StrCat("--data-dir ", path.string())};
  }
  if (sources.environment) {
    absl::StatusOr<std::optional<security::JobSecretSource::Found>> found =
        security::JobSecretSource::Resolve(job_id, sources.environment);
    if (!found.ok()) return found.status();
    if (found->has_value()) return ResolvedToken{(*found)->secret, (*found)->source};
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", job_id,
      " needs its token for this command; pass it one of three ways: --token TOKEN, "
      "--token-file FILE, or the TRAINSCOPE_TOKEN environment variable (or --data-dir DIR to "
      "read DIR/jobs/",
      job_id,
      "/token, written by the collector; or TRAINSCOPE_JOB_SECRET, TRAINSCOPE_JOB_SECRET_FILE, "
      "TRAINSCOPE_JOB_KEY_FILE, or the collector's default job key readable by this user)"));
}

}  // namespace trainscope::client

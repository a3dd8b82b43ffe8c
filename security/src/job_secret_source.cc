#include "trainscope/security/job_secret_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "trainscope/security/job_key.h"

namespace trainscope::security {
namespace {

// The first line of `path`, trimmed; `label` names the variable that gave it.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view label) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": cannot read '", path,
                                                   "': ", std::strerror(errno),
                                                   "; expected a file whose first line is the "
                                                   "job's secret (trainscope job-secret JOB)"));
  }
  std::string line;
  std::getline(in, line);
  std::string secret(absl::StripAsciiWhitespace(line));
  if (secret.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": '", path, "' is empty; expected the job's secret on its first line"));
  }
  return secret;
}

}  // namespace

JobSecretSource::EnvLookup JobSecretSource::ProcessEnv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> JobSecretSource::DefaultKeyPath(const EnvLookup& env) {
  // XDG: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (std::optional<std::string> config = env("XDG_CONFIG_HOME");
      config.has_value() && config->front() == '/') {
    return absl::StrCat(*config, "/trainscope/job.key");
  }
  if (std::optional<std::string> home = env("HOME"); home.has_value()) {
    return absl::StrCat(*home, "/.config/trainscope/job.key");
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<JobSecretSource::Found>> JobSecretSource::Resolve(
    std::string_view job_id, const EnvLookup& env) {
  if (std::optional<std::string> secret = env("TRAINSCOPE_JOB_SECRET"); secret.has_value()) {
    return Found{std::string(absl::StripAsciiWhitespace(*secret)), "TRAINSCOPE_JOB_SECRET"};
  }
  if (std::optional<std::string> path = env("TRAINSCOPE_JOB_SECRET_FILE"); path.has_value()) {
    absl::StatusOr<std::string> secret = ReadSecretFile(*path, "TRAINSCOPE_JOB_SECRET_FILE");
    if (!secret.ok()) return secret.status();
    return Found{*std::move(secret), absl::StrCat("TRAINSCOPE_JOB_SECRET_FILE ", *path)};
  }
  if (std::optional<std::string> path = env("TRAINSCOPE_JOB_KEY_FILE"); path.has_value()) {
    absl::StatusOr<JobKey> key = JobKey::ReadFile(*path, "TRAINSCOPE_JOB_KEY_FILE");
    if (!key.ok()) return key.status();
    return Found{key->JobSecret(absl::string_view(job_id.data(), job_id.size())),
                 absl::StrCat("TRAINSCOPE_JOB_KEY_FILE ", *path)};
  }
  std::optional<std::string> path = DefaultKeyPath(env);
  // Absent or not ours to read: this process has no proof, and the
  // collector's refusal says how to give one.
  if (!path.has_value() || access(path->c_str(), R_OK) != 0) return std::nullopt;
  absl::StatusOr<JobKey> key = JobKey::ReadFile(*path, "the default job key");
  if (!key.ok()) return std::nullopt;
  return Found{key->JobSecret(absl::string_view(job_id.data(), job_id.size())),
               absl::StrCat("the job key ", *path)};
}

}  // namespace trainscope::security

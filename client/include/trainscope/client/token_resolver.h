// Finds the job token for a command that changes a job (halt, enable,
// disable). Sources, first found wins: --token, --token-file, the
// TRAINSCOPE_TOKEN variable, then DATA_DIR/jobs/JOB/token (the file the
// collector writes when it generated the token) when --data-dir is given,
// then the job's membership secret from the environment (the job key the
// user can read: security::JobSecretSource) when `environment` is set.
//
// Usage:
//   TokenResolver::Sources sources{.flag = args.Value("token"), ...};
//   absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve(job, sources);
//
// Threading: stateless; reads files on the calling thread.
#ifndef TRAINSCOPE_CLIENT_TOKEN_RESOLVER_H_
#define TRAINSCOPE_CLIENT_TOKEN_RESOLVER_H_

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainscope::client {

struct ResolvedToken {
  std::string token;
  std::string source;  // where it came from, for messages ("--token-file /x")
};

class TokenResolver {
 public:
  struct Sources {
    std::optional<std::string> flag = std::nullopt;                // --token
    std::optional<std::filesystem::path> file = std::nullopt;      // --token-file
    std::optional<std::string> env = std::nullopt;                 // TRAINSCOPE_TOKEN
    std::optional<std::filesystem::path> data_dir = std::nullopt;  // --data-dir
    // TRAINSCOPE_JOB_SECRET(_FILE), TRAINSCOPE_JOB_KEY_FILE, the default key.
    std::function<std::optional<std::string>(std::string_view)> environment = nullptr;
  };

  // Fails with FAILED_PRECONDITION (no source, naming every way to give one)
  // or INVALID_ARGUMENT (a named file that is missing, unreadable or empty).
  static absl::StatusOr<ResolvedToken> Resolve(const std::string& job_id, const Sources& sources);

  // Reads a token file: the first line, surrounding whitespace removed.
  static absl::StatusOr<std::string> ReadTokenFile(const std::filesystem::path& path);
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_TOKEN_RESOLVER_H_

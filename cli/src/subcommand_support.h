// Helpers shared by the subcommand implementations (private to the library).
#ifndef TRAINSCOPE_CLI_SRC_SUBCOMMAND_SUPPORT_H_
#define TRAINSCOPE_CLI_SRC_SUBCOMMAND_SUPPORT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/cli/command_context.h"
#include "trainscope/client/token_resolver.h"
#include "trainscope/proto/job_id.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::cli {

// Parses `args`. Returns an exit code when the subcommand must stop here
// (usage printed for --help: kExitOk; an error printed: kExitUsage), or
// nullopt with `*parsed` filled to go on.
std::optional<int> ParseOrExit(const base::ArgParser& parser, std::string_view command,
                               const std::vector<std::string>& args, const CommandContext& ctx,
                               base::ParsedArgs* parsed);

// Prints "trainscope COMMAND: MESSAGE" on ctx.err and returns `code`.
int Fail(const CommandContext& ctx, std::string_view command, const absl::Status& status,
         int code = kExitFailed);
int UsageError(const CommandContext& ctx, std::string_view command, absl::string_view message);

// Adds --token, --token-file and --data-dir.
void AddTokenFlags(base::ArgParser* parser);
client::TokenResolver::Sources TokenSources(const base::ParsedArgs& args,
                                            const CommandContext& ctx);

// Adds --job-key-file (the collector's job key, env TRAINSCOPE_JOB_KEY_FILE).
// FindJobKey: that key, else the collector's default key when this user can
// read it (docs/security.md). JobSecretFromKey: the secret of `job` derived
// from it, nullopt when there is no key (or only the default one and `job`
// is unknown: each rank then derives its own); an error when a given key is
// unreadable or `job` is unknown.
struct JobKeyLocation {
  std::string path;
  std::string label;  // "--job-key-file", "TRAINSCOPE_JOB_KEY_FILE", "the default job key"
  bool explicit_key = false;
};
void AddJobKeyFlag(base::ArgParser* parser);
std::optional<JobKeyLocation> FindJobKey(const base::ParsedArgs& args, const CommandContext& ctx);
absl::StatusOr<std::optional<std::string>> JobSecretFromKey(const base::ParsedArgs& args,
                                                            const CommandContext& ctx,
                                                            const std::optional<std::string>& job);

// Adds --halt-when, --for and --halt-below-efficiency; ParseHaltPolicyFlags
// reads them (a disabled policy when none is given).
void AddHaltPolicyFlags(base::ArgParser* parser);
absl::StatusOr<trainscope::v1::HaltPolicy> ParseHaltPolicyFlags(const base::ParsedArgs& args);

// Subcommands check job ids with protocol::ValidateJobId (the protocol's
// rule; its message names the id and what is expected).

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_SRC_SUBCOMMAND_SUPPORT_H_

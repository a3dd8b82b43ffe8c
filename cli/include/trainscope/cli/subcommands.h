// The `trainscope` subcommands. Each takes the arguments after its name,
// prints to ctx.out / ctx.err and returns an exit code (kExitOk, kExitFailed,
// kExitUsage). Each accepts --help.
//
// Threading: each runs on the calling thread (replay starts and joins its own).
#ifndef TRAINSCOPE_CLI_SUBCOMMANDS_H_
#define TRAINSCOPE_CLI_SUBCOMMANDS_H_

#include <string>
#include <vector>

#include "trainscope/cli/command_context.h"

namespace trainscope::cli {

int RunJobsCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunStatusCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunTailCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunHaltCommand(const std::vector<std::string>& args, const CommandContext& ctx);
// `enabled` picks between `trainscope enable` and `trainscope disable`.
int RunRecordingCommand(bool enabled, const std::vector<std::string>& args,
                        const CommandContext& ctx);
int RunReplayCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunRunCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunAttachCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunStepsCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunTrafficCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunClocksCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunItemsCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunOpsCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunExportCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunReportCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunImportCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunAlertsCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunPolicyCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunDetachCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunDeleteCommand(const std::vector<std::string>& args, const CommandContext& ctx);
int RunJobSecretCommand(const std::vector<std::string>& args, const CommandContext& ctx);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_SUBCOMMANDS_H_

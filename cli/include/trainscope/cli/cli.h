// The `trainscope` command line: picks the subcommand and runs it.
//
// Usage (main.cc):
//   CommandContext ctx{.out = &std::cout, .err = &std::cerr, .env = client::ProcessEnv(), ...};
//   return RunCli({argv + 1, argv + argc}, ctx);
//
// `trainscope`, `trainscope help` and `trainscope --help` print the usage
// (exit 0); `trainscope help SUB` is `trainscope SUB --help`; `--version`
// prints the version; an unknown subcommand is a usage error (exit 2).
// Threading: runs on the calling thread.
#ifndef TRAINSCOPE_CLI_CLI_H_
#define TRAINSCOPE_CLI_CLI_H_

#include <string>
#include <vector>

#include "trainscope/cli/command_context.h"

namespace trainscope::cli {

int RunCli(const std::vector<std::string>& args, const CommandContext& ctx);

// The top-level usage: every subcommand with one line each.
std::string CliUsage();

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_CLI_H_

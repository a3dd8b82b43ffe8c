// The target processes of `trainscope attach` and `detach`: --pid/--match
// flags, their checks, and gdb's and the plugin's whereabouts (private to the
// library).
#ifndef TRAINSCOPE_CLI_SRC_TARGET_SELECTION_H_
#define TRAINSCOPE_CLI_SRC_TARGET_SELECTION_H_

#include <optional>
#include <string>
#include <vector>

#include "trainscope/cli/command_context.h"
#include "trainscope/cli/plugin_locator.h"
#include "trainscope/cli/process_table.h"
#include "trainscope/cli/python_injector.h"
#include "trainscope/base/arg_parser.h"

namespace trainscope::cli {

inline constexpr int kDefaultInjectTimeoutSeconds = 15;

// Adds --pid (plus PID... positionals), --match, --timeout, --gdb,
// --python-dir and --json.
void AddTargetFlags(base::ArgParser* parser);

struct InjectionPlan {
  std::vector<ProcessInfo> targets;
  PluginPaths plugin;
  PythonInjector::Options injector;
  bool json = false;
};

// Resolves and checks everything before any process is touched: prints the
// errors (every failing target, not just the first) and returns the exit
// code when the command must stop here.
std::optional<int> PlanInjection(const base::ParsedArgs& args, const CommandContext& ctx,
                                 const std::string& command, InjectionPlan* plan);

// Prints each outcome (text or one JSON object) and returns the exit code.
int ReportOutcomes(const std::vector<InjectionOutcome>& outcomes, const InjectionPlan& plan,
                   const CommandContext& ctx, const std::string& command);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_SRC_TARGET_SELECTION_H_

#include "trainscope/cli/cli.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::cli {
namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  std::function<int(const std::vector<std::string>&, const CommandContext&)> run;
};

const std::vector<Subcommand>& Subcommands() {
  static const auto* const kSubcommands = new std::vector<Subcommand>{
      {"jobs", "list the jobs the collector knows", RunJobsCommand},
      {"status", "show one job: summary, ranks, commands", RunStatusCommand},
      {"tail", "follow a job's live feed, one line per update", RunTailCommand},
      {"steps", "per-step metrics across a job's devices (wait, transfer, FLOPS...)",
       RunStepsCommand},
      {"traffic", "bytes, messages and time between each pair of a job's devices",
       RunTrafficCommand},
      {"clocks", "clock offset, drift and uncertainty of every device of a job", RunClocksCommand},
      {"ops", "a job's operators on the aligned time axis (JSON)", RunOpsCommand},
      {"items", "the training items with the highest loss contribution (difficult items)",
       RunItemsCommand},
      {"export", "write a job as a Chrome (JSON) or Perfetto (protobuf) trace", RunExportCommand},
      {"report", "write an HTML report of a job: views, alerts, ranks, steps", RunReportCommand},
      {"import", "import PyTorch profiler traces (Chrome JSON) as a stored job", RunImportCommand},
      {"alerts", "alerts raised and cleared for a job (--follow to watch)", RunAlertsCommand},
      {"policy", "show or change a job's halt policy (changing needs the token)",
       RunPolicyCommand},
      {"halt", "halt every rank of a job (needs the job's token)", RunHaltCommand},
      {"enable", "switch recording on for a job (needs the job's token)",
       [](const std::vector<std::string>& args, const CommandContext& ctx) {
         return RunRecordingCommand(true, args, ctx);
       }},
      {"disable", "switch recording off for a job (needs the job's token)",
       [](const std::vector<std::string>& args, const CommandContext& ctx) {
         return RunRecordingCommand(false, args, ctx);
       }},
      {"replay", "stream a stored job log to the collector again", RunReplayCommand},
      {"delete", "delete a stored job from a data directory (not a live one)", RunDeleteCommand},
      {"job-secret", "print a job's secret from the collector's job key (or make a key)",
       RunJobSecretCommand},
      {"run", "run a training program with trainscope attached (no code change)", RunRunCommand},
      {"attach", "attach to running PyTorch processes (no restart; needs gdb)", RunAttachCommand},
      {"detach", "detach from running processes; they keep training", RunDetachCommand},
  };
  return *kSubcommands;
}

std::string VersionLine() {
  return absl::StrCat("trainscope ", kTrainscopeVersion, " (protocol ", kProtocolVersion, ")");
}

}  // namespace

std::string CliUsage() {
  std::string out = absl::StrCat(
      "trainscope: watch and control training jobs through a trainscope collector.\n\n"
      "Usage: trainscope COMMAND [arguments] [flags]\n\nCommands:\n");
  for (const Subcommand& sub : Subcommands()) {
    absl::StrAppend(&out, absl::StrFormat("  %-9s %s\n", sub.name, sub.summary));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("  %-9s %s\n", "help",
                      "this help; `trainscope help COMMAND` for a command's"),
      absl::StrFormat("  %-9s %s\n", "version", "print the version (also --version)"),
      "\nEvery command takes --help. Environment: TRAINSCOPE_COLLECTOR (default 127.0.0.1:7070),\n"
      "TRAINSCOPE_FEED, TRAINSCOPE_SNAPSHOT, TRAINSCOPE_TOKEN.\n"
      "Exit codes: 0 ok, 1 the operation failed (refused, unreachable), 2 usage error.\n");
  return out;
}

int RunCli(const std::vector<std::string>& args, const CommandContext& ctx) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    if (args.size() >= 2 && args[0] == "help") return RunCli({args[1], "--help"}, ctx);
    *ctx.out << CliUsage() << std::flush;
    return kExitOk;
  }
  if (args[0] == "--version" || args[0] == "version") {
    *ctx.out << VersionLine() << std::endl;
    return kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const Subcommand& sub : Subcommands()) {
    if (args[0] == sub.name) return sub.run(rest, ctx);
  }
  *ctx.err << "trainscope: unknown command '" << args[0] << "'\n\n" << CliUsage() << std::flush;
  return kExitUsage;
}

}  // namespace trainscope::cli

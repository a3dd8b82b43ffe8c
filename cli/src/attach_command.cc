// `trainscope attach`: starts trainscope inside PyTorch processes that are
// already running without it (see PythonInjector for how).
#include "absl/strings/str_cat.h"
#include "subcommand_support.h"
#include "target_selection.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/client/connection_options.h"

namespace trainscope::cli {

int RunAttachCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope attach",
      "Attach trainscope to running PyTorch processes that were started without it, without "
      "restarting them: each process loads the plugin, hooks its operators and optimizers and "
      "streams to the collector. Needs gdb and permission to ptrace the processes.");
  AddTargetFlags(&parser);
  parser.AddFlag("collector", "HOST:PORT",
                 "the collector the processes stream to (env TRAINSCOPE_COLLECTOR)",
                 client::kDefaultCollector);
  parser.AddFlag("job", "JOB",
                 "the job id (env TRAINSCOPE_JOB; default: what the process's own environment "
                 "gives, see trainscope.attach)");
  parser.AddFlag("token", "TOKEN", "the job's token (env TRAINSCOPE_TOKEN)");
  AddJobKeyFlag(&parser);
  parser.AddBoolFlag("dormant", "load the agent with recording off, until `trainscope enable JOB`");
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope attach --pid 4101 4102 --job resnet --collector 10.0.0.5:7070\n"
      "  trainscope attach --match train.py --job resnet\n"
      "Ranks are read inside each process from torch.distributed (once initialised) or from\n"
      "RANK/WORLD_SIZE. The processes stop for about a second while gdb enters them; the\n"
      "plugin starts on each main thread at its next Python statement.");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "attach", args, ctx, &parsed)) return *code;

  std::string collector = client::kDefaultCollector;
  if (parsed.Has("collector")) {
    collector = *parsed.Value("collector");
  } else if (std::optional<std::string> env = ctx.env("TRAINSCOPE_COLLECTOR"); env.has_value()) {
    collector = *env;
  }
  if (collector.empty()) return UsageError(ctx, "attach", "--collector expects HOST:PORT");
  std::optional<std::string> job = parsed.Value("job");
  if (!job.has_value()) job = ctx.env("TRAINSCOPE_JOB");
  if (job.has_value()) {
    if (absl::Status s = protocol::ValidateJobId(*job, "--job"); !s.ok()) {
      return UsageError(ctx, "attach", s.message());
    }
  }
  std::optional<std::string> token = parsed.Value("token");
  // The job's secret, derived from the job key this user can read (the
  // collector's default one included); without --job each process derives
  // its own job's from the default key it reads as the same user.
  std::optional<JobKeyLocation> key = FindJobKey(parsed, ctx);
  if (token.has_value() && key.has_value() && key->explicit_key) {
    return UsageError(ctx, "attach", "give --token or --job-key-file, not both");
  }
  // A given key wins over a TRAINSCOPE_TOKEN left in the shell; the default
  // key only fills in where nothing was given.
  if (!token.has_value() && !(key.has_value() && key->explicit_key)) {
    token = ctx.env("TRAINSCOPE_TOKEN");
  }
  if (!token.has_value()) {
    absl::StatusOr<std::optional<std::string>> secret = JobSecretFromKey(parsed, ctx, job);
    if (!secret.ok()) return UsageError(ctx, "attach", secret.status().message());
    token = *secret;
  }

  InjectionPlan plan;
  if (std::optional<int> code = PlanInjection(parsed, ctx, "attach", &plan)) return *code;

  InjectionRequest request;
  request.action = InjectionRequest::Action::kAttach;
  request.python_dir = plan.plugin.python_dir;
  auto& config = *request.config.mutable_fields();
  config["collector"].set_string_value(collector);
  if (job.has_value()) config["job"].set_string_value(*job);
  if (token.has_value()) config["token"].set_string_value(*token);
  config["dormant"].set_bool_value(parsed.Bool("dormant"));
  const std::vector<InjectionOutcome> outcomes =
      PythonInjector(plan.injector).Run(plan.targets, request);
  return ReportOutcomes(outcomes, plan, ctx, "attach");
}

}  // namespace trainscope::cli

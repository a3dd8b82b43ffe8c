// `trainscope run -- PROGRAM ARGS...`: runs a training program with
// trainscope attached and no change to its code. It sets TRAINSCOPE_* and
// puts the plugin's sitecustomize directory and the trainscope package on
// PYTHONPATH, then execs the program: every Python process it starts
// (ranks spawned by torchrun or torch.multiprocessing included) attaches
// itself once it is a training rank (see integrations/pytorch/sitecustomize).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "subcommand_support.h"
#include "trainscope/cli/plugin_locator.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/client/connection_options.h"

namespace trainscope::cli {
namespace {

int RealExec(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& set_env) {
  for (const auto& [name, value] : set_env) setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  return errno;
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope run",
      "Run a PyTorch training program with trainscope attached, without changing its code: "
      "each Python process it starts attaches when it becomes a training rank "
      "(torch.distributed.init_process_group) or at its first optimizer step.");
  parser.SetUsageTail("-- PROGRAM [ARGS...]");
  parser.AddFlag("collector", "HOST:PORT", "the collector to stream to (env TRAINSCOPE_COLLECTOR)",
                 client::kDefaultCollector);
  parser.AddFlag("job", "JOB",
                 "the job id (env TRAINSCOPE_JOB; default: TORCHELASTIC_RUN_ID or "
                 "<script>-<MASTER_PORT>)");
  parser.AddFlag("token", "TOKEN", "the job's token (env TRAINSCOPE_TOKEN)");
  AddJobKeyFlag(&parser);
  parser.AddBoolFlag("dormant",
                     "start with recording off, until `trainscope enable JOB` (sets "
                     "TRAINSCOPE_DORMANT=1)");
  AddHaltPolicyFlags(&parser);
  parser.AddFlag("python-dir", "DIR",
                 "where the trainscope package is (env TRAINSCOPE_PYTHON_DIR; default: "
                 "<bindir>/../python)");
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope run --job resnet -- /usr/bin/python3 train.py --epochs 3\n"
      "  trainscope run --collector 10.0.0.5:7070 -- torchrun --nproc-per-node 8 train.py\n"
      "  trainscope run --halt-when straggler --for 5 -- torchrun --nproc-per-node 4 train.py\n"
      "The same without this command: set TRAINSCOPE_COLLECTOR and put DIR/sitecustomize and\n"
      "DIR on PYTHONPATH. The program's exit code is trainscope run's.");

  // Everything after the first "--" is the program's, untouched.
  auto split = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> own(args.begin(), split);
  const std::vector<std::string> program = split == args.end()
                                               ? std::vector<std::string>{}
                                               : std::vector<std::string>(split + 1, args.end());
  // The parser takes no positionals: a word before "--" is a program given
  // without it, which deserves more than "unexpected argument".
  parser.AddRestPositionals("PROGRAM", "");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "run", own, ctx, &parsed)) return *code;
  if (!parsed.Rest().empty()) {
    return UsageError(ctx, "run",
                      absl::StrCat("unexpected argument '", parsed.Rest()[0],
                                   "'; put the program after '--': trainscope run [flags] -- ",
                                   parsed.Rest()[0], " ..."));
  }
  if (program.empty() || program[0].empty()) {
    return UsageError(ctx, "run",
                      split == args.end()
                          ? "missing '-- PROGRAM [ARGS...]': the program to run goes after '--'"
                          : "missing PROGRAM after '--'");
  }

  std::string collector = client::kDefaultCollector;
  if (parsed.Has("collector")) {
    collector = *parsed.Value("collector");
  } else if (std::optional<std::string> env = ctx.env("TRAINSCOPE_COLLECTOR"); env.has_value()) {
    collector = *env;
  }
  if (collector.empty()) return UsageError(ctx, "run", "--collector expects HOST:PORT");
  std::vector<std::pair<std::string, std::string>> set_env;
  set_env.emplace_back("TRAINSCOPE_COLLECTOR", collector);
  std::optional<std::string> job = parsed.Value("job");
  if (job.has_value()) {
    if (absl::Status s = protocol::ValidateJobId(*job, "--job"); !s.ok()) {
      return UsageError(ctx, "run", s.message());
    }
    set_env.emplace_back("TRAINSCOPE_JOB", *job);
  } else {
    job = ctx.env("TRAINSCOPE_JOB");
  }
  std::optional<std::string> token = parsed.Value("token");
  // The collector admits only ranks proving membership (by default): the
  // job's secret is derived here, from the job key this user can read, and
  // handed to every rank. Without --job the ranks name the job themselves
  // (TORCHELASTIC_RUN_ID, ...): a given key's path goes to them instead, and
  // each derives its own job's secret.
  std::optional<JobKeyLocation> key = FindJobKey(parsed, ctx);
  if (token.has_value() && key.has_value() && key->explicit_key) {
    return UsageError(ctx, "run", "give --token or --job-key-file, not both");
  }
  if (!token.has_value()) {
    if (!job.has_value() && key.has_value() && key->explicit_key) {
      set_env.emplace_back("TRAINSCOPE_JOB_KEY_FILE", key->path);
    } else {
      absl::StatusOr<std::optional<std::string>> secret = JobSecretFromKey(parsed, ctx, job);
      if (!secret.ok()) return UsageError(ctx, "run", secret.status().message());
      token = *secret;
    }
  }
  if (token.has_value()) set_env.emplace_back("TRAINSCOPE_TOKEN", *token);
  if (parsed.Bool("dormant")) set_env.emplace_back("TRAINSCOPE_DORMANT", "1");
  // Checked here so that a typo fails now, not silently inside the job.
  absl::StatusOr<trainscope::v1::HaltPolicy> policy = ParseHaltPolicyFlags(parsed);
  if (!policy.ok()) return UsageError(ctx, "run", policy.status().message());
  if (policy->enabled()) {
    set_env.emplace_back("TRAINSCOPE_HALT_WHEN", absl::StrJoin(policy->halt_when(), ","));
    set_env.emplace_back("TRAINSCOPE_HALT_FOR", absl::StrCat(policy->for_steps()));
    set_env.emplace_back("TRAINSCOPE_HALT_BELOW_EFFICIENCY",
                         absl::StrCat(policy->below_efficiency()));
  }

  absl::StatusOr<PluginPaths> plugin =
      PluginLocator::Locate(parsed.Value("python-dir"), ctx.env, SelfExecutable(),
                            /*need_sitecustomize=*/true);
  if (!plugin.ok()) return Fail(ctx, "run", plugin.status());
  // sitecustomize first: Python imports the first sitecustomize on the path
  // (ours chains to the one it shadows).
  std::string pythonpath =
      absl::StrCat(plugin->sitecustomize_dir.string(), ":", plugin->python_dir.string());
  if (std::optional<std::string> old = ctx.env("PYTHONPATH"); old.has_value()) {
    absl::StrAppend(&pythonpath, ":", *old);
  }
  set_env.emplace_back("PYTHONPATH", pythonpath);

  *ctx.out << std::flush;
  *ctx.err << std::flush;
  const int error = ctx.exec ? ctx.exec(program, set_env) : RealExec(program, set_env);
  return Fail(
      ctx, "run",
      absl::NotFoundError(absl::StrCat("cannot run '", program[0], "': ", std::strerror(error),
                                       error == ENOENT ? " (not found on PATH)" : "")));
}

}  // namespace trainscope::cli

#include "subcommand_support.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/security/job_key.h"
#include "trainscope/security/job_secret_source.h"

namespace trainscope::cli {

std::optional<int> ParseOrExit(const base::ArgParser& parser, std::string_view command,
                               const std::vector<std::string>& args, const CommandContext& ctx,
                               base::ParsedArgs* parsed) {
  absl::StatusOr<base::ParsedArgs> result = parser.Parse(args);
  if (!result.ok()) return UsageError(ctx, command, result.status().message());
  if (result->help_requested()) {
    *ctx.out << parser.Usage();
    return kExitOk;
  }
  *parsed = *std::move(result);
  return std::nullopt;
}

int Fail(const CommandContext& ctx, std::string_view command, const absl::Status& status,
         int code) {
  *ctx.err << "trainscope " << command << ": " << status.message() << std::endl;
  return code;
}

int UsageError(const CommandContext& ctx, std::string_view command, absl::string_view message) {
  *ctx.err << "trainscope " << command << ": " << message << "\n"
           << "Run 'trainscope " << command << " --help' for usage." << std::endl;
  return kExitUsage;
}

void AddTokenFlags(base::ArgParser* parser) {
  parser->AddFlag("token", "TOKEN", "the job's token (env TRAINSCOPE_TOKEN)");
  parser->AddFlag("token-file", "FILE", "read the job's token from the first line of FILE");
  parser->AddFlag("data-dir", "DIR",
                  "the collector's data dir: read the token it generated from DIR/jobs/JOB/token");
}

void AddJobKeyFlag(base::ArgParser* parser) {
  parser->AddFlag("job-key-file", "FILE",
                  "the collector's job key (its --job-key-file; env TRAINSCOPE_JOB_KEY_FILE; "
                  "default: the collector's default key when this user can read it): the ranks "
                  "get the job's secret derived from it as TRAINSCOPE_TOKEN");
}

std::optional<JobKeyLocation> FindJobKey(const base::ParsedArgs& args, const CommandContext& ctx) {
  if (std::optional<std::string> path = args.Value("job-key-file"); path.has_value()) {
    return JobKeyLocation{*path, "--job-key-file", /*explicit_key=*/true};
  }
  if (std::optional<std::string> path = ctx.env("TRAINSCOPE_JOB_KEY_FILE"); path.has_value()) {
    return JobKeyLocation{*path, "TRAINSCOPE_JOB_KEY_FILE", /*explicit_key=*/true};
  }
  std::optional<std::string> path = security::JobSecretSource::DefaultKeyPath(ctx.env);
  // Only a key this user can read: another user's collector admits this
  // user's ranks with a secret its operator hands out (--token).
  if (!path.has_value() || access(path->c_str(), R_OK) != 0) return std::nullopt;
  return JobKeyLocation{*path, "the default job key", /*explicit_key=*/false};
}

absl::StatusOr<std::optional<std::string>> JobSecretFromKey(const base::ParsedArgs& args,
                                                            const CommandContext& ctx,
                                                            const std::optional<std::string>& job) {
  std::optional<JobKeyLocation> where = FindJobKey(args, ctx);
  if (!where.has_value()) return std::nullopt;
  if (!job.has_value()) {
    if (!where->explicit_key) return std::nullopt;  // each rank derives its own
    return absl::InvalidArgumentError(absl::StrCat(
        where->label,
        " needs the job id (--job or TRAINSCOPE_JOB): each job's secret is derived from "
        "the key and the job id"));
  }
  absl::StatusOr<security::JobKey> key = security::JobKey::ReadFile(where->path, where->label);
  if (!key.ok()) {
    if (!where->explicit_key) return std::nullopt;
    return key.status();
  }
  return key->JobSecret(*job);
}

void AddHaltPolicyFlags(base::ArgParser* parser) {
  parser->AddFlag("halt-when", "RULE[,RULE...]",
                  "halt the job when any of these alert rules holds for --for consecutive steps "
                  "(straggler, collective_wait, slow_link, loader_stall, low_flops, "
                  "step_time_regression, ...)");
  parser->AddFlag("for", "K", "consecutive steps the condition must hold before the halt");
  parser->AddFlag("halt-below-efficiency", "X",
                  "halt the job when its efficiency (useful compute / step time) stays below X "
                  "for --for steps");
}

absl::StatusOr<trainscope::v1::HaltPolicy> ParseHaltPolicyFlags(const base::ParsedArgs& args) {
  absl::StatusOr<std::optional<int64_t>> steps = args.Int("for", 1, 1'000'000);
  if (!steps.ok()) return steps.status();
  absl::StatusOr<std::optional<double>> efficiency = args.Double("halt-below-efficiency", 0, 1);
  if (!efficiency.ok()) return efficiency.status();
  return collector::ParseHaltPolicy(args.Value("halt-when").value_or(""), steps->value_or(0),
                                    efficiency->value_or(0));
}

client::TokenResolver::Sources TokenSources(const base::ParsedArgs& args,
                                            const CommandContext& ctx) {
  client::TokenResolver::Sources sources;
  sources.flag = args.Value("token");
  if (std::optional<std::string> file = args.Value("token-file"); file.has_value()) {
    sources.file = *file;
  }
  sources.env = ctx.env("TRAINSCOPE_TOKEN");
  if (std::optional<std::string> dir = args.Value("data-dir"); dir.has_value()) {
    sources.data_dir = *dir;
  }
  // Last: the job's secret from the job key this user can read (the
  // collector's default one included), so a job's own user needs no flag.
  sources.environment = ctx.env;
  return sources;
}

}  // namespace trainscope::cli

// `trainscope job-secret JOB --job-key-file FILE`: prints the membership
// secret of JOB that a collector started with --job-key-file FILE admits,
// for ranks started by separate launchers (on several hosts) that read it
// from TRAINSCOPE_TOKEN or a file the operator distributes. `--new-key FILE`
// makes a key (mode 0600).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "subcommand_support.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/security/job_key.h"

namespace trainscope::cli {

int RunJobSecretCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope job-secret",
      "Print the secret of a job that a collector started with --job-key-file admits: every "
      "rank of the job presents it (TRAINSCOPE_TOKEN or --token), and commands that change "
      "the job (halt, enable, policy) take it as the job's token. Each job id has its own "
      "secret (HMAC-SHA256 of the id under the key), so handing one to a job opens no other.");
  parser.AddPositional("JOB", "the job id", /*required=*/false);
  AddJobKeyFlag(&parser);
  parser.AddFlag("new-key", "FILE",
                 "write a fresh random job key to FILE (mode 0600; never overwrites) and exit");
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope job-secret --new-key /etc/trainscope/job.key\n"
      "  trainscope-collector --job-key-file /etc/trainscope/job.key ...\n"
      "  TRAINSCOPE_TOKEN=$(trainscope job-secret resnet-17 --job-key-file "
      "/etc/trainscope/job.key)\n"
      "  trainscope run --job resnet-17 --job-key-file /etc/trainscope/job.key -- torchrun ...");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "job-secret", args, ctx, &parsed)) {
    return *code;
  }
  if (std::optional<std::string> path = parsed.Value("new-key"); path.has_value()) {
    if (absl::Status s = security::JobKey::WriteNewKeyFile(*path); !s.ok()) {
      return Fail(ctx, "job-secret", s);
    }
    *ctx.out << "wrote a new job key to " << *path << " (mode 0600)\n" << std::flush;
    return kExitOk;
  }
  std::optional<std::string> job = parsed.Positional("JOB");
  if (!job.has_value()) return UsageError(ctx, "job-secret", "missing JOB (or --new-key FILE)");
  if (absl::Status s = protocol::ValidateJobId(*job, "JOB"); !s.ok()) {
    return UsageError(ctx, "job-secret", s.message());
  }
  absl::StatusOr<std::optional<std::string>> secret = JobSecretFromKey(parsed, ctx, job);
  if (!secret.ok()) return Fail(ctx, "job-secret", secret.status());
  if (!secret->has_value()) {
    return UsageError(ctx, "job-secret",
                      "missing --job-key-file FILE (or TRAINSCOPE_JOB_KEY_FILE): the collector's "
                      "job key (this user cannot read the default one)");
  }
  *ctx.out << **secret << "\n" << std::flush;
  return kExitOk;
}

}  // namespace trainscope::cli

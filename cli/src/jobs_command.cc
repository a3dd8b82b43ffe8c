// `trainscope jobs` and `trainscope status JOB`: read-only queries.
#include "absl/strings/str_cat.h"
#include "subcommand_support.h"
#include "trainscope/cli/status_printer.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/client/commands_client.h"
#include "trainscope/client/connection_options.h"

namespace trainscope::cli {

int RunJobsCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser("trainscope jobs",
                         "List the jobs the collector knows: state, ranks connected/world, events, "
                         "events per second, recording.");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/false);
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "jobs", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "jobs", conn.status().message());

  client::CommandsClient client(conn->collector, conn->timeout, conn->security);
  absl::StatusOr<trainscope::v1::ListJobsResponse> jobs = client.ListJobs();
  if (!jobs.ok()) return Fail(ctx, "jobs", jobs.status());
  if (conn->json) {
    *ctx.out << ToJsonLine(*jobs) << std::endl;
  } else {
    *ctx.out << RenderJobsTable(*jobs, conn->collector) << RenderTierStatus(jobs->tier())
             << std::flush;
  }
  return kExitOk;
}

int RunStatusCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope status",
      "Show one job: its summary, a table of its ranks and the commands issued, and the "
      "collector's NATS tier counters when it is in a tier.");
  parser.AddPositional("JOB", "the job's id");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/false);
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "status", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "status", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "status", s.message());
  }

  client::CommandsClient client(conn->collector, conn->timeout, conn->security);
  absl::StatusOr<trainscope::v1::JobStatus> status = client.GetJobStatus(job);
  if (!status.ok()) return Fail(ctx, "status", status.status());
  if (conn->json) {
    *ctx.out << ToJsonLine(*status) << std::endl;
  } else {
    *ctx.out << RenderJobStatus(*status, absl::Now(), ctx.time_zone);
    // The collector's tier counters come with the job list (one small call);
    // the job's status is shown even if this second call fails.
    absl::StatusOr<trainscope::v1::ListJobsResponse> jobs = client.ListJobs();
    if (jobs.ok()) *ctx.out << RenderTierStatus(jobs->tier());
    *ctx.out << std::flush;
  }
  return kExitOk;
}

}  // namespace trainscope::cli

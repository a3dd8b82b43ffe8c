// `trainscope replay LOGDIR`: publish a stored job again.
#include "absl/strings/str_cat.h"
#include "subcommand_support.h"
#include "trainscope/cli/log_replayer.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/client/connection_options.h"

namespace trainscope::cli {

int RunReplayCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope replay",
      "Stream a stored job log to the collector again, one agent stream per stored "
      "stream, so it is logged and published like a live job.");
  parser.AddPositional("LOGDIR",
                       "one job's log directory, e.g. ./trainscope-data/jobs/JOB (segment-*.tslog "
                       "files)");
  parser.AddFlag("as-job", "NAME", "the replayed job's id (default: <original job>-replay)");
  parser.AddFlag("speed", "X",
                 "0: as fast as acknowledgements allow; 1: the original pacing; 2: twice as "
                 "fast, ...",
                 "0");
  parser.AddFlag("token", "TOKEN",
                 "the replayed job's token (default: the collector generates one and it is "
                 "printed)");
  parser.AddFlag("window", "N", "batches in flight per stream before waiting for acks", "64");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/false);
  parser.AddEpilog(
      "Progress goes to stderr once a second; the last line on stdout is the summary.\n"
      "Exit 1 when any batch was rejected or not acknowledged.");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "replay", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "replay", conn.status().message());
  absl::StatusOr<std::optional<double>> speed = parsed.Double("speed", 0, 1e6);
  if (!speed.ok()) return UsageError(ctx, "replay", speed.status().message());
  absl::StatusOr<std::optional<int64_t>> window = parsed.Int("window", 1, 100000);
  if (!window.ok()) return UsageError(ctx, "replay", window.status().message());
  const std::string as_job = parsed.Value("as-job").value_or("");
  if (parsed.Has("as-job")) {
    if (absl::Status s = protocol::ValidateJobId(as_job, "--as-job"); !s.ok()) {
      return UsageError(ctx, "replay", s.message());
    }
  }

  LogReplayer::Options options;
  options.log_dir = *parsed.Positional("LOGDIR");
  options.collector = conn->collector;
  options.security = conn->security;
  options.as_job = as_job;
  options.job_token = parsed.Value("token").value_or("");
  options.speed = speed->value_or(0);
  options.timeout = conn->timeout;
  options.max_unsettled_per_stream = static_cast<uint64_t>(window->value_or(64));
  options.stop = ctx.stop;
  options.progress = ctx.err;
  absl::StatusOr<LogReplayer::Summary> summary = LogReplayer::Run(options);
  if (!summary.ok()) {
    const bool bad_input =
        absl::IsNotFound(summary.status()) || absl::IsInvalidArgument(summary.status());
    return Fail(ctx, "replay", summary.status(), bad_input ? kExitUsage : kExitFailed);
  }
  // The first few errors; the summary counts them all (and --json lists them).
  constexpr size_t kErrorsShown = 10;
  for (size_t i = 0; i < summary->errors.size() && i < kErrorsShown; ++i) {
    *ctx.err << "trainscope replay: " << summary->errors[i] << "\n";
  }
  if (summary->errors.size() > kErrorsShown) {
    *ctx.err << "trainscope replay: ... and " << summary->errors.size() - kErrorsShown << " more\n";
  }
  if (!summary->generated_token.empty()) {
    *ctx.err << "the collector generated the token of job " << summary->job_id << ": "
             << summary->generated_token << " (halt/enable/disable need it)\n";
  }
  if (conn->json) {
    *ctx.out << summary->Json(options.log_dir) << std::endl;
  } else {
    *ctx.out << summary->Line(options.log_dir) << std::endl;
  }
  return summary->ok() ? kExitOk : kExitFailed;
}

}  // namespace trainscope::cli

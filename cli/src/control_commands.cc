// `trainscope halt`, `enable` and `disable`: commands that change a job and
// therefore carry the job's token.
#include "absl/strings/str_cat.h"
#include "subcommand_support.h"
#include "trainscope/cli/status_printer.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/client/commands_client.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/token_resolver.h"

namespace trainscope::cli {
namespace {

constexpr char kTokenEpilog[] =
    "The job's token is taken from, in order: --token, --token-file, the TRAINSCOPE_TOKEN\n"
    "environment variable, then DIR/jobs/JOB/token when --data-dir DIR is given (the collector\n"
    "writes that file when it generated the token).";

// "reached 4 ranks", with the collector's message, if any, or a hint when
// no rank got the command.
std::string RanksReached(const trainscope::v1::CommandReply& reply) {
  const uint32_t ranks = reply.ranks_reached();
  std::string text = absl::StrCat("reached ", ranks, ranks == 1 ? " rank" : " ranks");
  if (!reply.message().empty()) {
    absl::StrAppend(&text, " (", reply.message(), ")");
  } else if (ranks == 0) {
    absl::StrAppend(&text, " (no rank is connected)");
  }
  return text;
}

}  // namespace

int RunHaltCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope halt",
      "Halt every rank of a job at its next step boundary (each rank's on_halt "
      "callback runs first). Needs the job's token.");
  parser.AddPositional("JOB", "the job to halt");
  parser.AddFlag("reason", "TEXT", "why the job is halted (required; recorded in the job's log)");
  AddTokenFlags(&parser);
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/false);
  parser.AddEpilog(kTokenEpilog);
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "halt", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "halt", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "halt", s.message());
  }
  const std::optional<std::string> reason = parsed.Value("reason");
  if (!reason.has_value() || reason->empty()) {
    return UsageError(ctx, "halt",
                      "--reason TEXT is required (why the job is halted; it is recorded in the "
                      "job's log and shown to its ranks)");
  }
  absl::StatusOr<client::ResolvedToken> token =
      client::TokenResolver::Resolve(job, TokenSources(parsed, ctx));
  if (!token.ok()) return Fail(ctx, "halt", token.status(), kExitUsage);

  trainscope::v1::HaltJobRequest request;
  request.set_job_id(job);
  request.set_token(token->token);
  request.set_reason(*reason);
  request.set_requested_by(ctx.requested_by);
  client::CommandsClient client(conn->collector, conn->timeout, conn->security);
  absl::StatusOr<trainscope::v1::CommandReply> reply = client.Halt(request);
  if (!reply.ok()) return Fail(ctx, "halt", reply.status());
  if (conn->json) {
    *ctx.out << ToJsonLine(*reply) << std::endl;
  } else {
    *ctx.out << "halt sent to job " << job << ": " << RanksReached(*reply) << std::endl;
  }
  return kExitOk;
}

int RunRecordingCommand(bool enabled, const std::vector<std::string>& args,
                        const CommandContext& ctx) {
  const std::string name = enabled ? "enable" : "disable";
  base::ArgParser parser(
      absl::StrCat("trainscope ", name),
      enabled ? "Switch recording on for every rank of a job. Needs the job's token."
              : "Switch recording off for every rank of a job (the agents stay "
                "loaded, near zero cost). Needs the job's token.");
  parser.AddPositional("JOB", "the job's id");
  parser.AddFlag("sampling", "N", "record one in N operators (0 or 1: all)");
  parser.AddBoolFlag("loss-contribution",
                     "switch the loss-contribution hooks (trainscope.LossContribution) instead "
                     "of operator recording; ranks apply it at their next batch");
  AddTokenFlags(&parser);
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/false);
  parser.AddEpilog(kTokenEpilog);
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, name, args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, name, conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, name, s.message());
  }
  absl::StatusOr<std::optional<int64_t>> sampling = parsed.Int("sampling", 0, UINT32_MAX);
  if (!sampling.ok()) return UsageError(ctx, name, sampling.status().message());
  const bool loss_contribution = parsed.Has("loss-contribution");
  if (loss_contribution && sampling->has_value()) {
    return UsageError(ctx, name,
                      "--sampling applies to operator recording, not with --loss-contribution");
  }
  absl::StatusOr<client::ResolvedToken> token =
      client::TokenResolver::Resolve(job, TokenSources(parsed, ctx));
  if (!token.ok()) return Fail(ctx, name, token.status(), kExitUsage);

  trainscope::v1::SetRecordingRequest request;
  request.set_job_id(job);
  request.set_token(token->token);
  request.set_enabled(enabled);
  request.set_sampling_period(static_cast<uint32_t>(sampling->value_or(0)));
  request.set_loss_contribution(loss_contribution);
  client::CommandsClient client(conn->collector, conn->timeout, conn->security);
  absl::StatusOr<trainscope::v1::CommandReply> reply = client.SetRecording(request);
  if (!reply.ok()) return Fail(ctx, name, reply.status());
  if (conn->json) {
    *ctx.out << ToJsonLine(*reply) << std::endl;
  } else {
    *ctx.out << (loss_contribution ? "loss contribution " : "recording ")
             << (enabled ? "on" : "off") << " for job " << job;
    if (request.sampling_period() > 1) {
      *ctx.out << " (one in " << request.sampling_period() << " operators)";
    }
    *ctx.out << ": " << RanksReached(*reply) << std::endl;
  }
  return kExitOk;
}

}  // namespace trainscope::cli

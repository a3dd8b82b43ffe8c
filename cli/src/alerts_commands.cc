// `trainscope alerts` (what the collector's rules raised and cleared for a
// job, live, followed, or from the index of a data dir) and `trainscope
// policy` (show or change the job's halt policy).
#include <cstdint>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "job_queries.h"
#include "subcommand_support.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/status_printer.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/cli/table_printer.h"
#include "trainscope/client/commands_client.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/feed_follower.h"
#include "trainscope/client/token_resolver.h"
#include "trainscope/client/zmq_feed_source.h"
#include "trainscope/collector/analysis/alert_engine.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/store/alert_selection.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::cli {
namespace {

namespace v1 = trainscope::v1;

constexpr absl::Duration kPollSlice = absl::Milliseconds(200);
// Alerts of a job's last steps may follow its end on the feed (the analysis
// runs behind ingest): a finished job is followed this much longer.
constexpr absl::Duration kFinishGrace = absl::Seconds(3);

// "item 1432", "rank 2", "ranks 0,1", "link 0->1", "stage 1", or "job".
std::string Subject(const v1::Alert& alert) {
  if (alert.has_item()) return absl::StrCat("item ", alert.item());
  if (alert.link_src_rank() >= 0 && alert.link_dst_rank() >= 0) {
    return absl::StrCat("link ", alert.link_src_rank(), "->", alert.link_dst_rank());
  }
  if (alert.cause_rank() >= 0) return absl::StrCat("rank ", alert.cause_rank());
  if (alert.stage() >= 0) return absl::StrCat("stage ", alert.stage());
  if (alert.ranks_size() > 0) {
    return absl::StrCat(alert.ranks_size() == 1 ? "rank " : "ranks ",
                        absl::StrJoin(alert.ranks(), ","));
  }
  return "job";
}

void PrintTable(const std::vector<v1::Alert>& alerts, const CommandContext& ctx) {
  TablePrinter table({{"ID", TablePrinter::kRight},
                      {"STATE"},
                      {"RULE"},
                      {"STEP", TablePrinter::kRight},
                      {"ONSET", TablePrinter::kRight},
                      {"SUBJECT"},
                      {"MESSAGE"}});
  for (const v1::Alert& a : alerts) {
    std::string state = a.state() == v1::ALERT_STATE_RAISED ? "raised" : "cleared";
    if (a.halted_job()) state += " (halted)";
    table.AddRow({absl::StrCat(a.alert_id()), state, a.rule(), absl::StrCat(a.step()),
                  absl::StrCat(a.onset_step()), Subject(a), a.message()});
  }
  *ctx.out << table.Render() << std::flush;
}

void PrintLines(const std::vector<v1::Alert>& alerts, bool json, const CommandContext& ctx) {
  for (const v1::Alert& a : alerts) *ctx.out << (json ? ToJsonLine(a) : FormatAlert(a)) << "\n";
  *ctx.out << std::flush;
}

// Prints alerts as they are raised and cleared until Ctrl-C, --for, or a
// little after the job finished, was halted or was lost.
int Follow(const std::string& job, v1::AlertQuery query, const client::ConnectionOptions& conn,
           absl::Time end, const CommandContext& ctx) {
  client::ZmqFeedSource source(conn.feed, conn.snapshot, ctx.stop, conn.security);
  client::FeedFollower follower(&source, job, conn.timeout);
  uint64_t last_id = query.after_alert_id();
  std::set<std::pair<uint64_t, int>> printed;  // (id, state): a resnapshot repeats nothing
  auto print = [&](const v1::Alert& alert) {
    if (!query.rule().empty() && alert.rule() != query.rule()) return;
    if (!printed.insert({alert.alert_id(), alert.state()}).second) return;
    last_id = std::max(last_id, alert.alert_id());
    *ctx.out << (conn.json ? ToJsonLine(alert) : FormatAlert(alert)) << std::endl;
  };
  absl::Time finish_at = absl::InfiniteFuture();
  auto handle = [&](std::vector<client::FeedFollower::Event>& events) -> absl::Status {
    for (client::FeedFollower::Event& event : events) {
      switch (event.type) {
        case client::FeedFollower::Event::kSnapshot: {
          // Everything raised before this snapshot (or while updates were lost).
          v1::AlertQuery missed = query;
          missed.set_after_alert_id(0);
          absl::StatusOr<std::vector<v1::Alert>> alerts =
              AskLiveAlerts(source, job, missed, conn.timeout);
          if (!alerts.ok()) return alerts.status();
          for (const v1::Alert& alert : *alerts) print(alert);
          // A job that already ended sends nothing more: end like one that ends now.
          const v1::JobState state = event.snapshot.summary().state();
          if (state == v1::JOB_STATE_FINISHED || state == v1::JOB_STATE_HALTED ||
              state == v1::JOB_STATE_LOST) {
            finish_at = std::min(finish_at, absl::Now() + kFinishGrace);
          }
          break;
        }
        case client::FeedFollower::Event::kUpdate:
          if (event.update.has_alert()) print(event.update.alert());
          if (event.update.has_job()) {
            const v1::JobState state = event.update.job().state();
            if (state == v1::JOB_STATE_FINISHED || state == v1::JOB_STATE_HALTED ||
                state == v1::JOB_STATE_LOST) {
              finish_at = std::min(finish_at, absl::Now() + kFinishGrace);
            }
          }
          break;
        case client::FeedFollower::Event::kGap:
          *ctx.err << "warning: missed feed updates; asking for the alerts again" << std::endl;
          break;
        case client::FeedFollower::Event::kNotice:
          *ctx.err << "note: " << event.text << std::endl;
          break;
      }
    }
    events.clear();
    return absl::OkStatus();
  };
  std::vector<client::FeedFollower::Event> events;
  if (absl::Status status = follower.Start(&events); !status.ok()) {
    if (absl::IsCancelled(status)) return kExitOk;
    return Fail(ctx, "alerts", status);
  }
  if (absl::Status status = handle(events); !status.ok()) return Fail(ctx, "alerts", status);
  while (!ctx.stopped()) {
    if (ctx.out->fail()) return kExitOk;  // the reader went away (`| head`)
    const absl::Time now = absl::Now();
    if (now >= end || now >= finish_at) break;
    absl::StatusOr<bool> got =
        follower.Poll(std::min({kPollSlice, end - now, finish_at - now}), &events);
    if (!got.ok()) return Fail(ctx, "alerts", got.status());
    if (absl::Status status = handle(events); !status.ok()) return Fail(ctx, "alerts", status);
  }
  if (finish_at != absl::InfiniteFuture() && !conn.json) {
    *ctx.err << "job " << job << " ended; " << printed.size() << " alert change"
             << (printed.size() == 1 ? "" : "s") << " seen" << std::endl;
  }
  return kExitOk;
}

}  // namespace

int RunAlertsCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope alerts",
      "The alerts the collector's rules raised and cleared for a job: stragglers, "
      "long collective waits (who waits for whom), slow links, loader stalls, "
      "pipeline imbalance, step-time regressions, lost devices.");
  parser.AddPositional("JOB", "the job's id");
  parser.AddBoolFlag("follow",
                     "keep printing alerts as they are raised and cleared, until "
                     "Ctrl-C, --for, or the job ends");
  parser.AddFlag("for", "SECONDS", "with --follow: stop after this long");
  parser.AddBoolFlag("open", "only alerts raised and not cleared yet");
  parser.AddFlag("rule", "RULE", "only this rule's alerts");
  parser.AddFlag("after", "ID", "only alerts with an id greater than ID", "0");
  parser.AddFlag("data-dir", "DIR",
                 "read the alerts from the index in DIR (the collector's --data-dir) instead of "
                 "asking the live collector");
  parser.AddBoolFlag("evaluate",
                     "with --data-dir: run the rules again over the job's stored log instead of "
                     "reading what the collector raised (try thresholds on past runs)");
  parser.AddFlag("rules", "FILE",
                 "with --evaluate: the rules file to try (default: the built-in rules)");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
  parser.AddEpilog(
      "Each alert is raised once per cause and cleared once when the cause goes away; a clear\n"
      "repeats its raise's ID. SUBJECT names the cause: the late rank of a collective wait,\n"
      "the slow link, the imbalanced stage. Rules and thresholds: trainscope-collector\n"
      "--print-default-rules.");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "alerts", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "alerts", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "alerts", s.message());
  }
  v1::AlertQuery query;
  query.set_open_only(parsed.Bool("open"));
  query.set_rule(parsed.Value("rule").value_or(""));
  absl::StatusOr<std::optional<int64_t>> after = parsed.Int("after", 0, INT64_MAX);
  if (!after.ok()) return UsageError(ctx, "alerts", after.status().message());
  query.set_after_alert_id(static_cast<uint64_t>(after->value_or(0)));
  absl::StatusOr<std::optional<double>> duration = parsed.Double("for", 0, 1e9);
  if (!duration.ok()) return UsageError(ctx, "alerts", duration.status().message());
  const std::optional<std::string> data_dir = parsed.Value("data-dir");

  if (parsed.Bool("follow")) {
    if (data_dir)
      return UsageError(ctx, "alerts", "--follow watches the live collector; drop --data-dir");
    if (query.open_only()) return UsageError(ctx, "alerts", "--open and --follow do not mix");
    const absl::Time end =
        duration->has_value() ? absl::Now() + absl::Seconds(**duration) : absl::InfiniteFuture();
    return Follow(job, query, *conn, end, ctx);
  }
  if (duration->has_value()) return UsageError(ctx, "alerts", "--for needs --follow");
  const bool evaluate = parsed.Bool("evaluate");
  if (evaluate && !data_dir) return UsageError(ctx, "alerts", "--evaluate needs --data-dir DIR");
  if (parsed.Has("rules") && !evaluate)
    return UsageError(ctx, "alerts", "--rules needs --evaluate");

  absl::StatusOr<std::vector<v1::Alert>> alerts;
  if (evaluate) {
    alerts = EvaluateRules(*data_dir, job, parsed.Value("rules"));
    if (alerts.ok()) alerts = collector::SelectAlerts(*alerts, query);
  } else if (data_dir) {
    alerts = AskAlertIndex(*data_dir, job, query);
  } else {
    client::ZmqFeedSource source(conn->feed, conn->snapshot, nullptr, conn->security);
    alerts = AskLiveAlerts(source, job, query, conn->timeout);
  }
  if (!alerts.ok()) return Fail(ctx, "alerts", alerts.status());
  if (conn->json) {
    PrintLines(*alerts, /*json=*/true, ctx);
  } else if (alerts->empty()) {
    *ctx.out << "no " << (query.open_only() ? "open " : "") << "alerts for job " << job << "\n";
  } else {
    PrintTable(*alerts, ctx);
  }
  return kExitOk;
}

int RunPolicyCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope policy",
      "Show a job's halt policy, or change it: the collector halts the job by itself "
      "when an alert rule holds (or its efficiency stays low) for K consecutive "
      "steps. Changing it needs the job's token.");
  parser.AddPositional("JOB", "the job's id");
  AddHaltPolicyFlags(&parser);
  parser.AddBoolFlag("off", "switch the job's halt policy off");
  AddTokenFlags(&parser);
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/false);
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope policy resnet                                  (show it)\n"
      "  trainscope policy resnet --halt-when straggler,slow_link --for 5\n"
      "  trainscope policy resnet --halt-below-efficiency 0.5 --for 20\n"
      "  trainscope policy resnet --off");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "policy", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "policy", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "policy", s.message());
  }
  absl::StatusOr<v1::HaltPolicy> policy = ParseHaltPolicyFlags(parsed);
  if (!policy.ok()) return UsageError(ctx, "policy", policy.status().message());
  const bool off = parsed.Bool("off");
  if (off && policy->enabled()) {
    return UsageError(ctx, "policy", "--off and a new policy do not mix");
  }
  client::CommandsClient client(conn->collector, conn->timeout, conn->security);
  if (!off && !policy->enabled()) {
    absl::StatusOr<v1::JobStatus> status = client.GetJobStatus(job);
    if (!status.ok()) return Fail(ctx, "policy", status.status());
    if (conn->json) {
      *ctx.out << ToJsonLine(status->halt_policy()) << std::endl;
    } else {
      *ctx.out << "job " << job << ": " << collector::DescribeHaltPolicy(status->halt_policy())
               << std::endl;
    }
    return kExitOk;
  }
  absl::StatusOr<client::ResolvedToken> token =
      client::TokenResolver::Resolve(job, TokenSources(parsed, ctx));
  if (!token.ok()) return Fail(ctx, "policy", token.status(), kExitUsage);
  v1::SetHaltPolicyRequest request;
  request.set_job_id(job);
  request.set_token(token->token);
  *request.mutable_policy() = *policy;  // disabled when --off
  request.set_requested_by(ctx.requested_by);
  absl::StatusOr<v1::CommandReply> reply = client.SetHaltPolicy(request);
  if (!reply.ok()) return Fail(ctx, "policy", reply.status());
  if (conn->json) {
    *ctx.out << ToJsonLine(*reply) << std::endl;
  } else {
    *ctx.out << reply->message() << std::endl;
  }
  return kExitOk;
}

}  // namespace trainscope::cli

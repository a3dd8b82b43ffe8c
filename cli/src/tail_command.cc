// `trainscope tail JOB`: the live feed of one job, human-readable.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "subcommand_support.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/status_printer.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/cli/update_formatter.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/feed_follower.h"
#include "trainscope/client/zmq_feed_source.h"

namespace trainscope::cli {
namespace {

constexpr absl::Duration kPollSlice = absl::Milliseconds(200);

}  // namespace

int RunTailCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope tail",
      "Follow a job's live feed: a snapshot of the job, then one line per update "
      "(job, rank and command updates). Stops on Ctrl-C, after --count updates or "
      "after --for seconds.");
  parser.AddPositional("JOB", "the job to follow (it may start later)");
  parser.AddRepeatedFlag(
      "kinds", "LIST",
      "update kinds to print, comma-separated: job,rank,command,alert,step,clock,ops,loss,maps "
      "(default: all)");
  parser.AddFlag("count", "N", "stop after printing N updates");
  parser.AddFlag("for", "SECONDS", "stop after this long");
  parser.AddFlag("quiet-after", "SECONDS",
                 "say so on stderr when the feed has been quiet this long", "5");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
  parser.AddEpilog(
      "Output: the snapshot (as `trainscope status` prints it), then per update\n"
      "  TIME  #SEQ  KIND     DETAILS\n"
      "With --json: one JSON object per line, {\"snapshot\":JobStatus} or "
      "{\"update\":FeedUpdate}.\n"
      "Warnings (missed updates, a quiet feed) go to stderr.");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "tail", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "tail", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "tail", s.message());
  }
  std::set<std::string> kinds;
  for (const std::string& value : parsed.Values("kinds")) {
    for (absl::string_view kind : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      kind = absl::StripAsciiWhitespace(kind);
      const auto& known = UpdateFormatter::kKinds;
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return kind == k; })) {
        return UsageError(ctx, "tail",
                          absl::StrCat("--kinds: unknown kind '", kind, "' (expected one of ",
                                       absl::StrJoin(known, ", "), ")"));
      }
      kinds.insert(std::string(kind));
    }
  }
  absl::StatusOr<std::optional<int64_t>> count = parsed.Int("count", 1, INT64_MAX);
  if (!count.ok()) return UsageError(ctx, "tail", count.status().message());
  absl::StatusOr<std::optional<double>> duration = parsed.Double("for", 0, 1e9);
  if (!duration.ok()) return UsageError(ctx, "tail", duration.status().message());
  absl::StatusOr<std::optional<double>> quiet_after = parsed.Double("quiet-after", 0.1, 1e9);
  if (!quiet_after.ok()) return UsageError(ctx, "tail", quiet_after.status().message());

  const absl::Time start = absl::Now();
  const absl::Time end =
      duration->has_value() ? start + absl::Seconds(**duration) : absl::InfiniteFuture();
  const absl::Duration quiet_limit = absl::Seconds(quiet_after->value_or(5));

  client::ZmqFeedSource source(conn->feed, conn->snapshot, ctx.stop, conn->security);
  client::FeedFollower follower(&source, job, conn->timeout);
  UpdateFormatter formatter(ctx.time_zone);
  int64_t printed = 0;

  auto handle = [&](std::vector<client::FeedFollower::Event>& events) {
    for (client::FeedFollower::Event& event : events) {
      switch (event.type) {
        case client::FeedFollower::Event::kSnapshot:
          formatter.Seed(event.snapshot);
          if (conn->json) {
            *ctx.out << "{\"snapshot\":" << ToJsonLine(event.snapshot) << "}" << std::endl;
          } else {
            *ctx.out << "snapshot of job " << job << " at #" << event.snapshot.feed_sequence()
                     << ":\n"
                     << RenderJobStatus(event.snapshot, absl::Now(), ctx.time_zone) << std::flush;
          }
          break;
        case client::FeedFollower::Event::kUpdate: {
          if (!kinds.empty() && kinds.count(UpdateFormatter::KindOf(event.update)) == 0) break;
          if (conn->json) {
            *ctx.out << "{\"update\":" << ToJsonLine(event.update) << "}" << std::endl;
          } else {
            *ctx.out << formatter.Format(event.update) << std::endl;
          }
          ++printed;
          break;
        }
        case client::FeedFollower::Event::kGap:
          *ctx.err << "warning: missed updates #" << event.expected << ".." << event.received - 1
                   << " (the feed dropped them); re-snapshotting" << std::endl;
          break;
        case client::FeedFollower::Event::kNotice:
          *ctx.err << "note: " << event.text << std::endl;
          break;
      }
      if (count->has_value() && printed >= **count) return;
    }
    events.clear();
  };

  std::vector<client::FeedFollower::Event> events;
  if (absl::Status status = follower.Start(&events); !status.ok()) {
    if (absl::IsCancelled(status)) return kExitOk;  // Ctrl-C while waiting for the snapshot
    return Fail(ctx, "tail", status);
  }
  handle(events);

  absl::Time last_message = absl::Now();
  bool quiet_reported = false;
  while (!ctx.stopped() && !(count->has_value() && printed >= **count)) {
    if (ctx.out->fail()) return kExitOk;  // the reader went away (`| head`)
    const absl::Time now = absl::Now();
    if (now >= end) break;
    absl::StatusOr<bool> got = follower.Poll(std::min(kPollSlice, end - now), &events);
    if (!got.ok()) return Fail(ctx, "tail", got.status());
    if (*got) {
      last_message = absl::Now();
      quiet_reported = false;
      handle(events);
      events.clear();
      continue;
    }
    if (!quiet_reported && absl::Now() - last_message >= quiet_limit) {
      quiet_reported = true;
      *ctx.err << "note: no updates for " << absl::FormatDuration(quiet_limit) << " on the feed at "
               << source.Describe() << " (job " << job
               << " may be idle or not started; Ctrl-C to stop)" << std::endl;
    }
  }
  return kExitOk;
}

}  // namespace trainscope::cli

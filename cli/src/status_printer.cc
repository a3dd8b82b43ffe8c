#include "trainscope/cli/status_printer.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/table_printer.h"

namespace trainscope::cli {

std::string RenderJobsTable(const trainscope::v1::ListJobsResponse& jobs,
                            const std::string& collector) {
  if (jobs.jobs_size() == 0) {
    return absl::StrCat("no jobs yet: the collector at ", collector,
                        " has not seen any (start training with the trainscope agent, or "
                        "`trainscope replay LOGDIR`)\n");
  }
  TablePrinter table({{"JOB"},
                      {"STATE"},
                      {"RANKS", TablePrinter::kRight},
                      {"EVENTS", TablePrinter::kRight},
                      {"EVENTS/S", TablePrinter::kRight},
                      {"RECORDING"}});
  for (const trainscope::v1::JobSummary& job : jobs.jobs()) {
    table.AddRow({job.job_id(), JobStateName(job.state()),
                  absl::StrCat(job.ranks_connected(), "/", job.world_size()),
                  FormatCount(job.events_received()), FormatRate(job.events_per_second()),
                  job.recording() ? "on" : "off"});
  }
  return table.Render();
}

std::string RenderTierStatus(const trainscope::v1::TierStatus& tier) {
  std::string out;
  if (tier.node()) {
    absl::StrAppend(&out, "tier node -> ", tier.publish_url(), ": ",
                    tier.connected() ? "connected" : "NOT CONNECTED (buffering)", ", ",
                    FormatCount(tier.buffered()), " buffered, ", FormatCount(tier.published()),
                    " published (acknowledged), ", FormatCount(tier.caught_up()),
                    " caught up from the log, ", FormatCount(tier.rewinds()), " rewinds, ",
                    FormatCount(tier.outages()), " outages\n");
  }
  if (tier.job_level()) {
    absl::StrAppend(&out, "tier job level <- ", tier.upstream_url(), ": ",
                    FormatCount(tier.consumed()), " consumed, ", FormatCount(tier.duplicates()),
                    " duplicates dropped, ", FormatCount(tier.received()), " received, lag ",
                    tier.lag_ns() > 0 ? absl::StrCat(FormatMs(tier.lag_ns()), " ms") : "-", "\n");
  }
  return out;
}

std::string RenderJobSummaryLine(const trainscope::v1::JobSummary& summary) {
  std::string line = absl::StrCat(
      "job ", summary.job_id(), ": ", JobStateName(summary.state()), ", ",
      summary.ranks_connected(), "/", summary.world_size(), " ranks connected (",
      summary.ranks_seen(), " seen), ", FormatCount(summary.events_received()), " events (",
      FormatRate(summary.events_per_second()), "), recording ", summary.recording() ? "on" : "off");
  // Only once switched from outside: before that each rank's script decides.
  if (summary.has_loss_contribution()) {
    absl::StrAppend(&line, ", loss contribution ", summary.loss_contribution() ? "on" : "off");
  }
  return line;
}

std::string RenderCommandRecord(const trainscope::v1::CommandRecord& command, absl::TimeZone zone) {
  std::string line = absl::StrCat(
      FormatTimestamp(command.requested_unix_ns(), zone), "  ", command.command(), " by ",
      command.requested_by().empty() ? "?" : command.requested_by(), ", reached ",
      command.ranks_reached(), command.ranks_reached() == 1 ? " rank" : " ranks");
  if (!command.reason().empty()) absl::StrAppend(&line, ", reason ", Quote(command.reason()));
  if (command.command() == "halt") {
    absl::StrAppend(&line,
                    command.halt_at_step() != 0
                        ? absl::StrCat(", at step ", command.halt_at_step(), " (",
                                       command.halt_margin_steps(), " past the furthest rank)")
                        : ", at the next step");
  }
  return line;
}

std::string RenderLogRecovery(const trainscope::v1::LogRecovery& recovery) {
  std::string out = absl::StrCat("recovered from disk: ", FormatCount(recovery.records()),
                                 " records in ", FormatCount(recovery.segments()), " segments");
  const bool lost = recovery.events_lost() > 0 || recovery.records_lost() > 0 ||
                    recovery.bytes_lost() > 0 || recovery.segments_missing() > 0;
  if (lost) {
    absl::StrAppend(&out, "; LOST ", FormatCount(recovery.events_lost()), " events, ",
                    FormatCount(recovery.records_lost()), " records, ",
                    FormatBytes(recovery.bytes_lost()));
    if (recovery.segments_missing() > 0) {
      absl::StrAppend(&out, " (", recovery.segments_missing(), " segment",
                      recovery.segments_missing() == 1 ? "" : "s", " missing)");
    }
  } else {
    absl::StrAppend(&out, ", nothing lost");
  }
  if (recovery.corrupt_records() > 0) {
    absl::StrAppend(&out, "; ", FormatCount(recovery.corrupt_records()),
                    " damaged stretches skipped");
  }
  if (recovery.torn_bytes_cut() > 0) {
    absl::StrAppend(&out, "; ", FormatBytes(recovery.torn_bytes_cut()), " torn tail cut");
  }
  if (recovery.index_rebuilt()) absl::StrAppend(&out, "; index rebuilt");
  absl::StrAppend(&out, "\n");
  constexpr int kMaxLines = 10;
  for (int i = 0; i < recovery.messages_size() && i < kMaxLines; ++i) {
    absl::StrAppend(&out, "  ", recovery.messages(i), "\n");
  }
  if (recovery.messages_size() > kMaxLines) {
    absl::StrAppend(&out, "  ... ", recovery.messages_size() - kMaxLines,
                    " more (trainscope status --json shows all)\n");
  }
  return out;
}

std::string RenderJobStatus(const trainscope::v1::JobStatus& status, absl::Time now,
                            absl::TimeZone zone) {
  const trainscope::v1::JobSummary& summary = status.summary();
  std::string out = absl::StrCat(RenderJobSummaryLine(summary), "\n");
  absl::StrAppend(&out, "  received ", FormatBytes(summary.bytes_received()), ", created ",
                  FormatTimestamp(summary.created_unix_ns(), zone), ", last event ",
                  FormatAgo(summary.last_event_unix_ns(), now), ", feed sequence ",
                  status.feed_sequence(), "\n");
  if (status.ranks_size() == 0) {
    absl::StrAppend(&out, "no ranks have connected yet\n");
  } else {
    TablePrinter table({{"RANK", TablePrinter::kRight},
                        {"HOST"},
                        {"PID", TablePrinter::kRight},
                        {"CONNECTED"},
                        {"EVENTS", TablePrinter::kRight},
                        {"BATCHES", TablePrinter::kRight},
                        {"AGENT-DROPS", TablePrinter::kRight},
                        {"REFUSED", TablePrinter::kRight},
                        {"LAST-SEEN"}});
    for (const trainscope::v1::RankStatus& rank : status.ranks()) {
      std::string connected =
          rank.connected()
              ? "yes"
              : (rank.said_goodbye() ? (rank.exit_error().empty() ? "no (goodbye)" : "no (failed)")
                                     : "no");
      table.AddRow({absl::StrCat(rank.rank()), rank.host(), absl::StrCat(rank.pid()), connected,
                    FormatCount(rank.events_received()), FormatCount(rank.batches_received()),
                    FormatDrops(rank.agent_drops()), FormatCount(rank.batches_refused()),
                    FormatAgo(rank.last_seen_unix_ns(), now)});
    }
    absl::StrAppend(&out, table.Render());
    for (const trainscope::v1::RankStatus& rank : status.ranks()) {
      if (!rank.exit_error().empty()) {
        absl::StrAppend(&out, "rank ", rank.rank(), " ended with an error: ", rank.exit_error(),
                        "\n");
      }
      if (rank.store_refused_batches() > 0) {
        absl::StrAppend(&out, "rank ", rank.rank(), ": ", FormatCount(rank.store_refused_events()),
                        " events in ", FormatCount(rank.store_refused_batches()),
                        " batches refused by the log (disk full or failing; the agent resends "
                        "what it kept)\n");
      }
      if (rank.events_lost() > 0) {
        absl::StrAppend(&out, "rank ", rank.rank(), ": ", FormatCount(rank.events_lost()),
                        " events LOST from the log (see recovery below)\n");
      }
    }
  }
  if (summary.hellos_refused() > 0) {
    // Squat and takeover attempts show here too, where the job's user looks.
    absl::StrAppend(&out, FormatCount(summary.hellos_refused()),
                    " hellos refused (ranks that could not join, or processes without the "
                    "job's proof); the last",
                    summary.last_hello_refusal_from().empty()
                        ? std::string()
                        : absl::StrCat(", from ", summary.last_hello_refusal_from()),
                    ": ", summary.last_hello_refusal(), "\n");
  }
  if (status.has_recovery()) absl::StrAppend(&out, RenderLogRecovery(status.recovery()));
  if (status.has_analysis_memory()) {
    const trainscope::v1::AnalysisMemory& memory = status.analysis_memory();
    absl::StrAppend(&out, "analysis memory: ", FormatCount(memory.names()), " names",
                    memory.name_budget() > 0
                        ? absl::StrCat(" (budget ", FormatCount(memory.name_budget()), ")")
                        : std::string(),
                    ", ", FormatCount(memory.operators_held()), " operators held",
                    memory.released() ? " (released: the job ended)" : "", "\n");
    if (memory.names_over_budget() > 0) {
      absl::StrAppend(&out, FormatCount(memory.names_over_budget()),
                      " names past the budget read as \"(name budget exceeded)\" "
                      "(raise --max-job-names)\n");
    }
    if (memory.operators_evicted() > 0) {
      absl::StrAppend(&out, FormatCount(memory.operators_evicted()),
                      " operators evicted from Marey queries (--max-stored-operators)\n");
    }
  }
  if (status.commands_size() > 0) {
    absl::StrAppend(&out, "commands:\n");
    for (const trainscope::v1::CommandRecord& command : status.commands()) {
      absl::StrAppend(&out, "  ", RenderCommandRecord(command, zone), "\n");
    }
  }
  return out;
}

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) {
    return "{}";  // only on invalid UTF-8 in a string field; the collector validates those
  }
  return json;
}

}  // namespace trainscope::cli

// `trainscope steps`, `trainscope clocks`, `trainscope items`, `trainscope
// ops` and `trainscope export`: what the collector's analysis made of a job
// (per-step metrics, clock estimates, difficult items, aligned operators,
// traces for other tools), asked live from the snapshot server or computed
// from a stored log with --data-dir.
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "job_queries.h"
#include "subcommand_support.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/status_printer.h"
#include "trainscope/cli/step_table.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/cli/table_printer.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/zmq_feed_source.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/export/chrome_trace_writer.h"
#include "trainscope/collector/export/perfetto_trace_writer.h"

namespace trainscope::cli {
namespace {

namespace v1 = trainscope::v1;

void AddAnalysisFlags(base::ArgParser* parser) {
  parser->AddPositional("JOB", "the job's id");
  client::ConnectionOptions::AddFlags(parser, /*with_feed=*/true);
  parser->AddFlag("data-dir", "DIR",
                  "analyse the job's stored log in DIR (the collector's --data-dir) instead of "
                  "asking the live collector");
}

// The analysis's answer to `request` (job set by the caller), live or offline.
absl::StatusOr<v1::FeedSnapshot> Ask(const base::ParsedArgs& parsed,
                                     const client::ConnectionOptions& conn,
                                     v1::SnapshotRequest request) {
  return AskAnalysis(parsed.Value("data-dir"), conn, std::move(request));
}

// Parses the common part; returns an exit code to stop with, or nullopt.
std::optional<int> Prepare(const base::ArgParser& parser, std::string_view command,
                           const std::vector<std::string>& args, const CommandContext& ctx,
                           base::ParsedArgs* parsed, client::ConnectionOptions* conn,
                           std::string* job) {
  if (std::optional<int> code = ParseOrExit(parser, command, args, ctx, parsed)) return code;
  absl::StatusOr<client::ConnectionOptions> resolved =
      client::ConnectionOptions::Resolve(*parsed, ctx.env);
  if (!resolved.ok()) return UsageError(ctx, command, resolved.status().message());
  *conn = *resolved;
  *job = *parsed->Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(*job, "JOB"); !s.ok()) {
    return UsageError(ctx, command, s.message());
  }
  return std::nullopt;
}

}  // namespace

int RunStepsCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser("trainscope steps",
                           "Per-step metrics of a job across its devices: step time, data wait, "
                           "compute, collective wait and transfer, idle, FLOPS, peak memory.");
  AddAnalysisFlags(&parser);
  parser.AddFlag("first", "N", "first step to show", "0");
  parser.AddFlag("last", "N", "last step to show (0: the newest)", "0");
  parser.AddFlag("max", "N", "show at most N steps (0: the collector's cap)", "0");
  parser.AddEpilog(
      "Times are milliseconds. WAIT is time inside collectives spent waiting for the last "
      "participant to arrive (WAITED_FOR names it); XFER is the rest of the collective time. "
      "On a device with GPU work the figures are device time (each kernel counts in the step "
      "whose CPU launch made it): COMPUTE is GPU busy, WAIT/XFER split the NCCL kernels, and "
      "COPY_MS, LAUNCH_MS (GPU idle while the CPU launched nothing), SYNC_MS (GPU idle while "
      "the host sat in a sync call) and KERNELS follow, then a line per device saying where "
      "its GPU's time went.");
  base::ParsedArgs parsed;
  client::ConnectionOptions conn;
  std::string job;
  if (auto code = Prepare(parser, "steps", args, ctx, &parsed, &conn, &job)) return *code;
  v1::SnapshotRequest request;
  request.set_job_id(job);
  const std::pair<const char*, std::function<void(uint64_t)>> bounds[] = {
      {"first", [&](uint64_t v) { request.mutable_steps()->set_first_step(v); }},
      {"last", [&](uint64_t v) { request.mutable_steps()->set_last_step(v); }},
      {"max",
       [&](uint64_t v) { request.mutable_steps()->set_max_steps(static_cast<uint32_t>(v)); }},
  };
  for (const auto& [flag, set] : bounds) {
    absl::StatusOr<std::optional<int64_t>> v = parsed.Int(flag, 0, INT32_MAX);
    if (!v.ok()) return UsageError(ctx, "steps", v.status().message());
    set(static_cast<uint64_t>(v->value_or(0)));
  }
  absl::StatusOr<v1::FeedSnapshot> reply = Ask(parsed, conn, request);
  if (!reply.ok()) return Fail(ctx, "steps", reply.status());
  if (conn.json) {
    for (const v1::StepReport& step : reply->steps()) *ctx.out << ToJsonLine(step) << "\n";
    *ctx.out << std::flush;
    return kExitOk;
  }
  if (reply->steps().empty()) {
    *ctx.out << "no closed steps yet for job " << job << "\n";
    return kExitOk;
  }
  *ctx.out << RenderStepTable(reply->steps()) << std::flush;
  return kExitOk;
}

namespace {

std::string History(const v1::DifficultItem& item) {
  std::string out;
  for (const v1::EpochScore& e : item.history()) {
    absl::StrAppend(&out, out.empty() ? "" : " ", e.epoch(), ":",
                    e.position() == 0 ? "-" : absl::StrCat("#", e.position()));
  }
  return out.empty() ? "-" : out;
}

std::string Class(int32_t c) { return c < 0 ? "?" : absl::StrCat(c); }

// One item's snapshots: the maps' totals per layer and iteration.
void PrintSnapshots(const v1::LossAnswer& answer, uint64_t item, std::ostream& out) {
  if (answer.snapshots().empty()) {
    out << "no map snapshots kept for item " << item
        << " (maps are taken when a selected item is in a batch)\n";
    return;
  }
  TablePrinter table({{"ITERATION", TablePrinter::kRight},
                      {"EPOCH", TablePrinter::kRight},
                      {"RANK", TablePrinter::kRight},
                      {"LABEL", TablePrinter::kRight},
                      {"PRED", TablePrinter::kRight},
                      {"CONTRIB", TablePrinter::kRight},
                      {"MAPS (layer HxW)"}});
  for (const v1::ItemSnapshot& s : answer.snapshots()) {
    std::string maps;
    for (const v1::LayerMap& m : s.maps()) {
      absl::StrAppend(&maps, maps.empty() ? "" : ", ", m.layer(), " ", m.height(), "x", m.width());
    }
    table.AddRow({absl::StrCat(s.iteration()), absl::StrCat(s.epoch()), absl::StrCat(s.rank()),
                  Class(s.label()), Class(s.prediction()),
                  absl::StrFormat("%.4g", s.contribution()), maps.empty() ? "-" : maps});
  }
  out << table.Render();
}

}  // namespace

int RunItemsCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope items",
      "The job-wide top-N training items by loss contribution (the sum of forward "
      "value x backward derivative over the item's elements at the selection layer), "
      "as merged from every rank's trainscope.LossContribution reports: candidates "
      "for mislabeled or ambiguous items.");
  AddAnalysisFlags(&parser);
  parser.AddFlag("item", "INDEX", "also list this item's contribution-map snapshots");
  parser.AddEpilog(
      "HISTORY lists epoch:#place in that epoch's job-wide top-N. IN_TOP counts the completed "
      "epochs in a row the item stayed in it; the difficult_item rule raises an alert at 3 "
      "(rules file: difficult_item { consecutive_epochs: N }).");
  base::ParsedArgs parsed;
  client::ConnectionOptions conn;
  std::string job;
  if (auto code = Prepare(parser, "items", args, ctx, &parsed, &conn, &job)) return *code;
  v1::SnapshotRequest request;
  request.set_job_id(job);
  absl::StatusOr<std::optional<int64_t>> item = parsed.Int("item", 0, INT64_MAX);
  if (!item.ok()) return UsageError(ctx, "items", item.status().message());
  request.mutable_loss()->set_want_item(item->has_value());
  request.mutable_loss()->set_item(static_cast<uint64_t>(item->value_or(0)));
  absl::StatusOr<v1::FeedSnapshot> reply = Ask(parsed, conn, request);
  if (!reply.ok()) return Fail(ctx, "items", reply.status());
  const v1::LossAnswer& answer = reply->loss();
  if (conn.json) {
    *ctx.out << ToJsonLine(answer) << "\n" << std::flush;
    return kExitOk;
  }
  const v1::LossState& state = answer.state();
  if (state.items().empty()) {
    *ctx.out << "no loss-contribution data for job " << job
             << " (the training script starts it with trainscope.LossContribution)\n"
             << std::flush;
    return kExitOk;
  }
  *ctx.out << "job " << job << ": epoch " << state.epoch() << " (iteration " << state.iteration()
           << "), top " << state.top_n() << " by loss contribution at layer "
           << state.selection_layer();
  if (state.has_last_complete_epoch()) {
    *ctx.out << "; last epoch complete on every rank: " << state.last_complete_epoch();
  }
  *ctx.out << "\n";
  TablePrinter table({{"#", TablePrinter::kRight},
                      {"ITEM", TablePrinter::kRight},
                      {"CONTRIB", TablePrinter::kRight},
                      {"LABEL", TablePrinter::kRight},
                      {"PRED", TablePrinter::kRight},
                      {"RANK", TablePrinter::kRight},
                      {"IN_TOP", TablePrinter::kRight},
                      {"MAPS", TablePrinter::kRight},
                      {"HISTORY"}});
  int place = 0;
  for (const v1::DifficultItem& i : state.items()) {
    table.AddRow({absl::StrCat(++place), absl::StrCat(i.item()),
                  absl::StrFormat("%.4g", i.contribution()), Class(i.label()),
                  Class(i.prediction()), absl::StrCat(i.rank()), absl::StrCat(i.epochs_in_top()),
                  absl::StrCat(i.snapshots()), History(i)});
  }
  *ctx.out << table.Render();
  if (item->has_value()) {
    *ctx.out << "\nitem " << **item << ":\n";
    PrintSnapshots(answer, static_cast<uint64_t>(**item), *ctx.out);
  }
  *ctx.out << std::flush;
  return kExitOk;
}

int RunClocksCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope clocks",
      "The clock estimate of every device of a job: its clock domain, offset and "
      "drift against the reference device (0 for ranks sharing its clock), "
      "uncertainty, the signals used, jumps detected.");
  AddAnalysisFlags(&parser);
  parser.AddEpilog(
      "OFFSET is the reference rank's clock minus the device's (add it to the device's "
      "timestamps to read them on the reference clock), DRIFT how much faster the reference "
      "clock runs, in ppm; UNCERTAINTY is one standard error of the offset. Ranks of one clock "
      "domain (one host's boot; the files of one import) read the reference clock itself: "
      "\"exact\". SOURCE is the signal used: gpu collectives (NCCL kernel ends), collectives "
      "(their CPU records), send/recv, probes, own wall clock (no signal: the device's own "
      "reading). GPU_COLL, CPU_COLL and PROBES count the samples of each. \"insufficient "
      "evidence\": too few samples, or too short a span, to fit a drift; the offset stands "
      "with drift 0 and its uncertainty. --json prints the raw ClockReport (offset_ns maps "
      "onto Unix time and is epoch-sized).");
  base::ParsedArgs parsed;
  client::ConnectionOptions conn;
  std::string job;
  if (auto code = Prepare(parser, "clocks", args, ctx, &parsed, &conn, &job)) return *code;
  v1::SnapshotRequest request;
  request.set_job_id(job);
  request.mutable_steps()->set_max_steps(1);  // any analysis query brings the clocks
  absl::StatusOr<v1::FeedSnapshot> reply = Ask(parsed, conn, request);
  if (!reply.ok()) return Fail(ctx, "clocks", reply.status());
  if (conn.json) {
    *ctx.out << ToJsonLine(reply->clocks()) << std::endl;
    return kExitOk;
  }
  *ctx.out << FormatClockTable(reply->clocks()) << std::flush;
  return kExitOk;
}

int RunOpsCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope ops",
      "Operators of a job on the aligned time axis (the Marey graph's data), as "
      "JSON lines: one MareyView with the operators in the range.");
  AddAnalysisFlags(&parser);
  parser.AddFlag("start-ns", "NS", "range start on the job's reference clock (0: the beginning)",
                 "0");
  parser.AddFlag("end-ns", "NS", "range end (0: the end)", "0");
  parser.AddRepeatedFlag("rank", "R", "only this rank (repeatable)");
  parser.AddFlag("bins", "N", "horizontal aggregation into about N bins (0: every operator)", "0");
  parser.AddFlag("max-operators", "N", "at most N operators (0: the collector's cap)", "0");
  parser.AddBoolFlag("raw", "place operators by their devices' own clocks");
  base::ParsedArgs parsed;
  client::ConnectionOptions conn;
  std::string job;
  if (auto code = Prepare(parser, "ops", args, ctx, &parsed, &conn, &job)) return *code;
  v1::SnapshotRequest request;
  request.set_job_id(job);
  v1::MareyQuery* q = request.mutable_marey();
  for (const char* flag : {"start-ns", "end-ns"}) {
    absl::StatusOr<std::optional<int64_t>> v = parsed.Int(flag, 0, INT64_MAX);
    if (!v.ok()) return UsageError(ctx, "ops", v.status().message());
    (std::string_view(flag) == "start-ns" ? q->set_start_ns(v->value_or(0))
                                          : q->set_end_ns(v->value_or(0)));
  }
  for (const std::string& r : parsed.Values("rank")) {
    uint32_t rank = 0;
    if (!absl::SimpleAtoi(r, &rank)) {
      return UsageError(ctx, "ops", absl::StrCat("--rank '", r, "' is not a rank number"));
    }
    q->add_ranks(rank);
  }
  absl::StatusOr<std::optional<int64_t>> bins = parsed.Int("bins", 0, 100'000);
  if (!bins.ok()) return UsageError(ctx, "ops", bins.status().message());
  q->set_bins(static_cast<uint32_t>(bins->value_or(0)));
  absl::StatusOr<std::optional<int64_t>> max = parsed.Int("max-operators", 0, INT32_MAX);
  if (!max.ok()) return UsageError(ctx, "ops", max.status().message());
  q->set_max_operators(static_cast<uint32_t>(max->value_or(0)));
  q->set_raw_timestamps(parsed.Bool("raw"));
  absl::StatusOr<v1::FeedSnapshot> reply = Ask(parsed, conn, request);
  if (!reply.ok()) return Fail(ctx, "ops", reply.status());
  *ctx.out << ToJsonLine(reply->marey()) << std::endl;
  return kExitOk;
}

int RunExportCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope export",
      "Write a job's operators (aligned clocks) as a trace that other tools open: "
      "Chrome trace JSON (chrome://tracing, ui.perfetto.dev) or Perfetto's "
      "protobuf trace (ui.perfetto.dev, trace_processor).");
  AddAnalysisFlags(&parser);
  parser.AddFlag("format", "chrome|perfetto", "the trace format (required)");
  parser.AddFlag("out", "FILE", "where to write the trace (required)");
  parser.AddEpilog(
      "Chrome traces: one process per rank, microseconds after the job's first operator (the "
      "origin is in otherData.origin_unix_ns), collectives and send/recv pairs linked by flow "
      "events. Live, the export holds what the collector's analysis keeps (its newest "
      "operators); from --data-dir, the whole stored log as analysed now.");
  base::ParsedArgs parsed;
  client::ConnectionOptions conn;
  std::string job;
  if (auto code = Prepare(parser, "export", args, ctx, &parsed, &conn, &job)) return *code;
  const std::string format = parsed.Value("format").value_or("");
  if (format != "chrome" && format != "perfetto") {
    return UsageError(ctx, "export",
                      absl::StrCat("--format '", format, "': expected chrome or perfetto"));
  }
  const std::optional<std::string> out_path = parsed.Value("out");
  if (!out_path || out_path->empty()) return UsageError(ctx, "export", "--out FILE is required");
  v1::SnapshotRequest request;
  request.set_job_id(job);
  request.mutable_marey()->set_max_operators(UINT32_MAX);  // every operator, no bins
  absl::StatusOr<v1::FeedSnapshot> reply = Ask(parsed, conn, request);
  if (!reply.ok()) return Fail(ctx, "export", reply.status());
  const v1::OperatorBatch& operators = reply->marey().operators();
  if (operators.operators().empty()) {
    return Fail(ctx, "export",
                absl::FailedPreconditionError(absl::StrCat("job ", job, " has no operators yet")));
  }
  std::ofstream file(*out_path, std::ios::binary | std::ios::trunc);
  if (!file) {
    return Fail(ctx, "export",
                absl::PermissionDeniedError(absl::StrCat("cannot write ", *out_path)));
  }
  absl::Status written;
  std::string summary;
  if (format == "chrome") {
    collector::ChromeTraceWriter writer(&file, job);
    writer.Add(operators);
    written = writer.Finish();
    summary = absl::StrFormat("%d operators, %d flows", writer.operators_written(),
                              writer.flows_written());
  } else {
    collector::PerfettoTraceWriter writer(&file);
    writer.Add(operators);
    written = writer.Finish();
    summary =
        absl::StrFormat("%d slices on %d tracks", writer.slices_written(), writer.tracks_written());
  }
  if (!written.ok()) return Fail(ctx, "export", written);
  if (reply->marey().truncated()) {
    *ctx.err << "warning: the analysis holds only the newest operators of job " << job
             << "; older ones were not exported\n";
  }
  *ctx.out << "wrote " << *out_path << " (" << format << "): " << summary << std::endl;
  return kExitOk;
}

}  // namespace trainscope::cli

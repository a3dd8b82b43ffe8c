// `trainscope import --job NAME FILES...`: PyTorch profiler traces (Chrome
// trace JSON, plain or gzipped, one file per rank) into a stored job under
// the data dir, which every --data-dir command and the viewer then open.
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "job_queries.h"
#include "subcommand_support.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/collector/import/trace_importer.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::cli {
namespace {

namespace v1 = trainscope::v1;

// "rank3.json", "trace_rank_3.pt.trace.json.gz", "rank-0.Apr_03.pt.trace.json":
// the number after "rank" in the file's name. Only that: other digits in a
// name are versions, pids, dates ("ROCm6_2", "host_4242.pt.trace.json"), and
// the name is only a fallback behind the trace's own distributedInfo.
std::optional<uint32_t> RankFromName(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  static const std::regex kRank(R"(rank[_-]?(\d+))", std::regex::icase);
  std::smatch m;
  if (!std::regex_search(name, m, kRank)) return std::nullopt;
  uint32_t rank = 0;
  if (!absl::SimpleAtoi(m[1].str(), &rank)) return std::nullopt;
  return rank;
}

}  // namespace

int RunImportCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope import",
      "Import PyTorch profiler traces (Chrome trace JSON as torch.profiler's "
      "export_chrome_trace and Kineto write them, plain or gzipped; one file per "
      "rank) as a stored job: `trainscope steps/alerts/export/report JOB --data-dir "
      "DIR` and `trainscope-viewer --data-dir DIR --job JOB` then open it, its "
      "ranks aligned on their collectives.");
  parser.AddRestPositionals("FILES", "the trace files");
  parser.AddFlag("job", "NAME", "the new job's id (required)");
  parser.AddFlag("data-dir", "DIR", "where the job is stored (the collector's --data-dir)",
                 "./trainscope-data");
  parser.AddFlag("rank", "R", "the rank of a single file without distributedInfo");
  parser.AddBoolFlag("separate-clocks",
                     "the files came from different hosts: a file that does not name its host "
                     "gets a clock of its own (by default the files of one import share one "
                     "clock, as ranks on one host do)");
  parser.AddBoolFlag("rank-from-pid",
                     "one file holds every rank, each event's rank is its pid (trainscope's own "
                     "Chrome exports)");
  parser.AddEpilog(
      "Ranks: --rank, else the file's distributedInfo.rank (wherever it is in the file), else "
      "the number after 'rank' in the file's name, else 0 for a single file. Kineto GPU traces: "
      "kernels, copies and memsets go on their device's streams, linked to the CPU launch "
      "(args.correlation, or ac2g/async_cpu_to_gpu flows); NCCL kernels join their "
      "record_param_comms; gpu_user_annotation ranges are skipped (counted). Steps: "
      "ProfilerStep#N, else Optimizer.step# ranges, else the main thread's repeating pattern; "
      "the output says which, or why none. A malformed or truncated file is reported with its "
      "byte offset; what was read before it is kept.");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "import", args, ctx, &parsed)) return *code;
  const std::string job = parsed.Value("job").value_or("");
  if (absl::Status s = protocol::ValidateJobId(job, "--job"); !s.ok()) {
    return UsageError(ctx, "import", s.message());
  }
  const std::vector<std::string> files = parsed.Rest();
  if (files.empty()) return UsageError(ctx, "import", "give the trace files to import");
  std::optional<uint32_t> forced_rank;
  if (std::optional<std::string> r = parsed.Value("rank")) {
    uint32_t v = 0;
    if (!absl::SimpleAtoi(*r, &v)) {
      return UsageError(ctx, "import", absl::StrCat("--rank '", *r, "' is not a rank number"));
    }
    if (files.size() != 1) return UsageError(ctx, "import", "--rank names the rank of one file");
    forced_rank = v;
  }
  const bool from_pid = parsed.Bool("rank-from-pid");
  for (const std::string& file : files) {
    if (!std::filesystem::exists(file)) {
      return Fail(ctx, "import", absl::NotFoundError(absl::StrCat(file, ": no such file")));
    }
  }

  collector::TraceImportOptions options;
  options.data_dir = parsed.Value("data-dir").value_or("./trainscope-data");
  options.job_id = job;
  options.separate_clocks = parsed.Bool("separate-clocks");
  absl::StatusOr<std::unique_ptr<collector::TraceImporter>> importer =
      collector::TraceImporter::Create(options);
  if (!importer.ok()) return Fail(ctx, "import", importer.status());
  std::vector<collector::TraceImporter::Source> sources;
  for (const std::string& file : files) {
    collector::TraceImporter::Source source{file, forced_rank, from_pid, RankFromName(file)};
    sources.push_back(source);
  }
  const absl::Time start = absl::Now();
  const absl::Status imported = (*importer)->Import(sources);
  if (!imported.ok()) *ctx.err << "trainscope import: " << imported.message() << "\n";
  // The rules over the imported steps, into the data dir's index: the viewer
  // and `trainscope alerts --data-dir` show them as a live job's. A profiler
  // trace holds the few steps its schedule chose to record, past the
  // profiler's own wait and warm-up steps: the rules skip no warm-up steps of
  // their own (a live job's 5 would leave most traces without a judged step).
  std::string alert_summary;
  if (absl::StatusOr<std::vector<v1::Alert>> alerts =
          EvaluateRules(options.data_dir.string(), job, std::nullopt, /*default_warmup_steps=*/0);
      !alerts.ok()) {
    *ctx.err << "warning: the rules could not run over the import: " << alerts.status().message()
             << "\n";
  } else if (absl::StatusOr<std::unique_ptr<collector::LogIndex>> index =
                 collector::LogIndex::Open(options.data_dir / "index.sqlite");
             !index.ok()) {
    *ctx.err << "warning: no index for the alerts: " << index.status().message() << "\n";
  } else {
    (void)(*index)->UpsertJob(job, absl::ToUnixNanos(absl::Now()), 0);
    for (const v1::Alert& alert : *alerts) (void)(*index)->InsertAlert(alert);
    alert_summary =
        absl::StrCat("; the rules raised ", alerts->size(), " alert changes (",
                     "trainscope alerts ", job, " --data-dir ", options.data_dir.string(), ")");
  }
  const collector::TraceImportStats& s = (*importer)->stats();
  const collector::TraceMappingStats& m = s.mapping;
  const double seconds = std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - start));
  *ctx.out << absl::StrFormat(
                  "imported job %s into %s: %d events (%d collectives, %d step marks; %d "
                  "others skipped) from %d files, %.1f MB in %.2f s (%.1f MB/s, %.0f events/s)",
                  job, options.data_dir.string(), s.events, s.collectives, s.steps, s.skipped,
                  files.size(), static_cast<double>(s.bytes) / 1e6, seconds,
                  static_cast<double>(s.bytes) / 1e6 / seconds,
                  static_cast<double>(s.events) / seconds)
           << alert_summary << "\n";
  const uint64_t device_events = m.kernels + m.nccl_kernels + m.memcpys + m.memsets;
  if (device_events > 0 || m.runtime_calls > 0) {
    *ctx.out << absl::StrFormat(
        "  GPU: %d kernels, %d NCCL kernels (%d joined to their record_param_comms), %d copies, "
        "%d memsets, %d runtime calls; launches linked for %d of %d device events (%d without "
        "a known launch, kept with correlation 0)\n",
        m.kernels, m.nccl_kernels, m.nccl_joined, m.memcpys, m.memsets, m.runtime_calls,
        m.gpu_linked, device_events, m.gpu_unlinked);
  }
  if (m.gpu_annotations_skipped + m.gpu_syncs_skipped + m.profiler_spans_skipped > 0) {
    *ctx.out << absl::StrFormat(
        "  skipped: %d gpu_user_annotation ranges (copies of CPU annotations on the device's "
        "row), %d cuda_sync records (the CPU's synchronize call is kept), %d profiler spans\n",
        m.gpu_annotations_skipped, m.gpu_syncs_skipped, m.profiler_spans_skipped);
  }
  for (const collector::TraceFileReport& f : s.files) {
    std::string steps;
    if (f.has_step_marks) {
      steps = "steps from ProfilerStep# marks";
    } else if (f.step_source != collector::StepFinder::Source::kNone) {
      steps = absl::StrCat("steps from ", collector::StepFinder::SourceName(f.step_source), ": ",
                           f.step_description);
    } else {
      steps = f.step_description.empty() ? "no steps" : f.step_description;
    }
    *ctx.out << absl::StrFormat(
        "  %s: rank %s (%s%s), clock %s%s; %s\n", f.path,
        f.rank ? absl::StrCat(*f.rank) : std::string("?"), f.rank_source,
        f.trace_world_size ? absl::StrCat(", of ", *f.trace_world_size) : std::string(),
        f.clock_domain.empty() ? std::string("-") : f.clock_domain,
        f.gpus > 0 ? absl::StrCat(", ", f.gpus, " GPU(s)") : std::string(), steps);
  }
  ctx.out->flush();
  return imported.ok() ? kExitOk : kExitFailed;
}

}  // namespace trainscope::cli

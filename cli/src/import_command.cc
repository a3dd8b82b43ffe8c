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

// "rank3.json", "trace_rank_3.pt.trace.json.gz", "worker-2.json": the number
// after "rank" (or, failing that, the last number) of the file's name.
std::optional<uint32_t> RankFromName(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  static const std::regex kRank(R"(rank[_-]?(\d+))", std::regex::icase);
  static const std::regex kLast(R"((\d+)(?!.*\d))");
  std::smatch m;
  if (!std::regex_search(name, m, kRank) && !std::regex_search(name, m, kLast)) {
    return std::nullopt;
  }
  uint32_t rank = 0;
  if (!absl::SimpleAtoi(m[1].str(), &rank)) return std::nullopt;
  return rank;
}

}  // namespace

int RunImportCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  client::ArgParser parser(
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
  parser.AddBoolFlag("rank-from-pid",
                     "one file holds every rank, each event's rank is its pid (trainscope's own "
                     "Chrome exports)");
  parser.AddEpilog(
      "Ranks: the file's distributedInfo.rank when it comes before the events (Kineto), else "
      "the number after 'rank' in the file's name (or its last number), else --rank. A "
      "malformed or truncated file is reported with its byte offset; what was read before it "
      "is kept.");
  client::ParsedArgs parsed;
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
  // and `trainscope alerts --data-dir` show them as a live job's.
  std::string alert_summary;
  if (absl::StatusOr<std::vector<v1::Alert>> alerts =
          EvaluateRules(options.data_dir.string(), job, std::nullopt);
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
  const double seconds = std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - start));
  *ctx.out << absl::StrFormat(
                  "imported job %s into %s: %d events (%d collectives, %d step marks; %d "
                  "others skipped) from %d files, %.1f MB in %.2f s (%.1f MB/s, %.0f events/s)",
                  job, options.data_dir.string(), s.events, s.collectives, s.steps, s.skipped,
                  files.size(), static_cast<double>(s.bytes) / 1e6, seconds,
                  static_cast<double>(s.bytes) / 1e6 / seconds,
                  static_cast<double>(s.events) / seconds)
           << alert_summary << std::endl;
  return imported.ok() ? kExitOk : kExitFailed;
}

}  // namespace trainscope::cli

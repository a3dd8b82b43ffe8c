#include "trainscope/viewer/widgets/viewer_source.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/environment.h"
#include "trainscope/viewer/range_statistics.h"
#include "trainscope/viewer/snapshot_query_client.h"
#include "trainscope/viewer/synthetic_job.h"
#if TRAINSCOPE_VIEWER_STORED_JOBS
#include "trainscope/viewer/stored_job_loader.h"
#endif

namespace trainscope::viewer {
namespace {

absl::Status Fail(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

}  // namespace

absl::StatusOr<ViewerSource> LoadViewerSource(const base::ParsedArgs& args) {
  ViewerSource loaded;
  const bool synthetic = args.Bool("synthetic");
  const bool stored = args.Has("data-dir");
  const bool live = args.Has("feed") || args.Has("snapshot");
  if (int(synthetic) + int(stored) + int(live) != 1) {
    return Fail(
        "choose one source: --synthetic, --data-dir DIR --job JOB, or --feed ENDPOINT --job JOB");
  }
  absl::StatusOr<std::optional<int64_t>> max_operators =
      args.Int("max-operators", 1, 1'000'000'000);
  if (!max_operators.ok()) return max_operators.status();
  if (synthetic) {
    SyntheticJobOptions options;
    auto devices = args.Int("synthetic-devices", 1, 4096);
    auto stages = args.Int("synthetic-stages", 1, 64);
    auto steps = args.Int("synthetic-steps", 1, 100'000);
    auto straggler = args.Int("straggler", -1, 4095);
    for (const auto* value : {&devices, &stages, &steps, &straggler}) {
      if (!value->ok()) return value->status();
    }
    auto hosts = args.Int("synthetic-hosts", 1, 4096);
    auto racks = args.Int("synthetic-racks", 0, 4096);
    for (const auto* value : {&hosts, &racks}) {
      if (!value->ok()) return value->status();
    }
    options.hosts = static_cast<uint32_t>(**hosts);
    options.racks = static_cast<uint32_t>(**racks);
    options.devices = static_cast<uint32_t>(**devices);
    options.stages = static_cast<uint32_t>(**stages);
    options.steps = static_cast<uint32_t>(**steps);
    if (options.devices % options.stages != 0) {
      return Fail(absl::StrCat("--synthetic-stages ", options.stages,
                               " must divide --synthetic-devices ", options.devices));
    }
    if (**straggler < 0) {
      options.straggler.reset();
    } else if (**straggler >= static_cast<int64_t>(options.devices)) {
      return Fail(absl::StrCat("--straggler ", **straggler, " is not a rank of the ",
                               options.devices, "-device synthetic job"));
    } else {
      options.straggler = static_cast<uint32_t>(**straggler);
    }
    if (args.Has("job")) options.job_id = *args.Value("job");
    options.gpu = args.Bool("synthetic-gpu");
    if (args.Has("slow-link")) {
      const std::string value = *args.Value("slow-link");
      const std::vector<std::string> ends = absl::StrSplit(value, ':');
      uint32_t src = 0, dst = 0;
      if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &src) ||
          !absl::SimpleAtoi(ends[1], &dst) || src >= options.devices || dst >= options.devices ||
          src == dst) {
        return Fail(absl::StrCat("--slow-link ", value,
                                 ": expected SRC:DST, two different ranks of the ", options.devices,
                                 "-device synthetic job"));
      }
      options.slow_link = std::make_pair(src, dst);
    }
    loaded.data = GenerateSyntheticJob(options);
    loaded.source = "synthetic";
    return loaded;
  }
  if (!args.Has("job")) return Fail("--job JOB is required with --data-dir or --feed");
  if (args.Has("steps") && !stored) return Fail("--steps: only with --data-dir (a stored job)");
  absl::StatusOr<client::ClientSecurity> security =
      client::ClientSecurity::Resolve(args, client::ProcessEnv());
  if (!security.ok()) return security.status();
  loaded.security = *security;
  const std::string job = *args.Value("job");
  if (stored) {
    const std::filesystem::path dir = *args.Value("data-dir");
    if (!std::filesystem::is_directory(dir)) {
      return absl::NotFoundError(absl::StrCat("--data-dir ", dir.string(), ": no such directory"));
    }
#if TRAINSCOPE_VIEWER_STORED_JOBS
    StoredJobOptions options;
    options.max_operators = static_cast<uint32_t>(**max_operators);
    if (args.Has("steps")) {
      absl::StatusOr<StepSpan> steps = ParseStepSpan("--steps", *args.Value("steps"));
      if (!steps.ok()) return steps.status();
      options.steps = std::make_pair(steps->first, steps->last);
    }
    absl::StatusOr<JobData> data = LoadStoredJob(dir, job, options);
    if (!data.ok()) return data.status();
    if (data->coverage.cut()) {
      std::fprintf(stderr, "trainscope-viewer: %s\n", data->coverage.Notice().c_str());
    }
    loaded.data = std::move(*data);
    loaded.source = dir.string();
    loaded.load_steps = [dir, job, options](StepSpan span) {
      StoredJobOptions range = options;
      range.steps = std::make_pair(span.first, span.last);
      return LoadStoredJob(dir, job, range);
    };
    return loaded;
#else
    return absl::UnimplementedError(
        "--data-dir: this build has no offline analysis yet (trainscope::analysis's "
        "AnalyzeStoredJob); use --feed or --synthetic");
#endif
  }
  const std::string feed = args.Value("feed").value_or("");
  const std::string snapshot =
      args.Value("snapshot").value_or(client::ConnectionOptions::SnapshotNextToFeed(feed));
  auto history_steps = args.Int("history-steps", 1, 100'000);
  if (!history_steps.ok()) return history_steps.status();
  SnapshotQueryClient::HistoryOptions history;
  history.steps = static_cast<uint32_t>(**history_steps);
  history.max_operators = static_cast<uint32_t>(std::min<int64_t>(**max_operators, 150'000));
  if (args.Has("render")) {
    SnapshotQueryClient client(snapshot, nullptr, loaded.security);
    absl::StatusOr<JobData> data = client.FetchHistory(job, history);
    if (!data.ok()) return data.status();
    loaded.data = std::move(*data);
    absl::StatusOr<std::optional<int64_t>> item = args.Int("item", 0, INT64_MAX);
    if (!item.ok()) return item.status();
    std::optional<uint64_t> wanted;
    if (item->has_value()) wanted = static_cast<uint64_t>(**item);
    absl::StatusOr<LossData> loss = client.FetchLoss(job, wanted, history.timeout);
    if (loss.ok()) {
      loaded.data.loss = std::move(*loss);
    } else {
      std::fprintf(stderr, "trainscope-viewer: no loss contribution: %s\n",
                   std::string(loss.status().message()).c_str());
    }
  } else {
    loaded.data.job.job_id = job;
  }
  loaded.source = feed.empty() ? snapshot : feed;
  loaded.live = true;
  return loaded;
}

}  // namespace trainscope::viewer

#include "trainscope/viewer/widgets/viewer_app.h"

#include <QApplication>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/client/client_security.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/environment.h"
#include "trainscope/viewer/live_feed_client.h"
#include "trainscope/viewer/snapshot_query_client.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#if TRAINSCOPE_VIEWER_STORED_JOBS
#include "trainscope/viewer/stored_job_loader.h"
#endif

namespace trainscope::viewer {
namespace {

base::ArgParser MakeParser() {
  base::ArgParser parser(
      "trainscope-viewer",
      "Watch a training job: overview, Marey graph, alerts, halt, and the training "
      "items with the largest loss contribution (Selection and Monitoring views).");
  parser.AddFlag("job", "JOB", "the job to show (required unless --synthetic)");
  parser.AddFlag("data-dir", "DIR", "open the job's stored log under DIR offline");
  parser.AddFlag("feed", "ENDPOINT",
                 "follow the collector's live feed (ZeroMQ PUB), e.g. tcp://127.0.0.1:7071");
  parser.AddFlag(
      "snapshot", "ENDPOINT",
      "the collector's snapshot server (ZeroMQ REP); default: the feed's host, port 7072");
  parser.AddFlag("collector", "HOST:PORT",
                 "the collector's gRPC Commands service, for recording on/off and halt");
  parser.AddFlag("token", "TOKEN", "the job's token for commands that change it");
  parser.AddFlag("token-file", "FILE", "read the job's token from FILE");
  parser.AddBoolFlag("synthetic", "show a generated demo job (a straggler on one device)");
  parser.AddFlag("synthetic-devices", "N", "devices of the synthetic job", "6");
  parser.AddFlag("synthetic-stages", "N", "pipeline stages of the synthetic job", "1");
  parser.AddFlag("synthetic-steps", "N", "steps of the synthetic job", "8");
  parser.AddFlag("straggler", "RANK", "the synthetic job's slow device; -1: none", "3");
  parser.AddBoolFlag("synthetic-gpu",
                     "the synthetic job runs on GPUs: kernels, NCCL kernels and copies on streams");
  parser.AddFlag("slow-link", "SRC:DST",
                 "the synthetic job's slow link: its transfers from rank SRC to rank DST take 8x "
                 "as long (the traffic matrix's heaviest cell)");
  parser.AddFlag("synthetic-hosts", "N", "hosts of the synthetic job", "2");
  parser.AddFlag("synthetic-racks", "N", "racks the synthetic job's hosts sit in (0: none)", "0");
  parser.AddFlag("topology", "FILE",
                 "racks of the hosts for the cluster views: one 'HOST RACK' a line ('#' comments)");
  parser.AddFlag("level", "LEVEL",
                 "the cluster views' aggregation: device, host or rack (default: device for the "
                 "topology and Hilbert ring, host for the trend and chord views)");
  parser.AddFlag("frame-steps", "N", "the trend view's steps per frame", "1");
  parser.AddFlag("frame", "N", "the trend view's marked frame, from 0 (default: the newest)");
  parser.AddFlag("select-ranks", "LIST",
                 "select these devices in every linked view (as a lasso does), e.g. 0-3");
  parser.AddFlag("select-link", "SRC:DST", "select this link in every linked view");
  parser.AddFlag("mesh-width", "W",
                 "devices sit on a mesh W wide (rank % W, rank / W): the Hilbert ring orders "
                 "them along a Hilbert curve over it");
  parser.AddFlag("render", "VIEW",
                 "render offscreen and exit: overview, marey, alerts, jobs, selection, monitoring, "
                 "traffic-matrix, topology, trend, chord, hilbert-ring, all (the window) or each "
                 "(every one, FILE-VIEW.png)");
  parser.AddFlag("out", "FILE.png", "where --render writes");
  parser.AddFlag("width", "PX", "rendered width", "1600");
  parser.AddFlag("height", "PX", "rendered height", "900");
  parser.AddFlag("step", "N", "select step N (pinned) instead of following the newest");
  parser.AddFlag("ranks", "LIST", "show only these ranks in the Marey graph, e.g. 0,2-3");
  parser.AddFlag("alert", "ROW", "select alert ROW (0 = newest): its step, devices and operator");
  parser.AddFlag("grouping", "MODE", "Marey rows: none, stage or host", "none");
  parser.AddFlag("item", "N",
                 "the training item shown in the Monitoring view (default: the top item)");
  parser.AddFlag("iteration", "N",
                 "the Monitoring view's slider: the item's snapshot at iteration N (default: the "
                 "newest)");
  parser.AddFlag("map-scale", "SCALE",
                 "the Monitoring view's colour scale: per-iteration (each iteration on its own "
                 "maximum), shared (one linear scale over every snapshot) or log",
                 "per-iteration");
  parser.AddFlag("tab", "TAB",
                 "the window's tab: performance (overview and Marey graph) or loss (Selection and "
                 "Monitoring views); default: loss with --item or --iteration, else performance");
  parser.AddRepeatedFlag("expand", "GROUP", "expand a Marey group, e.g. 'stage 0'");
  parser.AddBoolFlag("raw", "place operators by the devices' raw clocks, not the aligned one");
  parser.AddFlag("cpu-rows", "MODE",
                 "Marey rows of the CPU operators of devices with GPU streams: show (a thin row) "
                 "or hide",
                 "show");
  parser.AddFlag("from-ms", "MS", "Marey time range start, ms after the first operator");
  parser.AddFlag("to-ms", "MS", "Marey time range end, ms after the first operator");
  parser.AddFlag("marey-steps", "N",
                 "Marey graph: follow the newest N steps (around --step when given); 0: the "
                 "whole run");
  parser.AddFlag("history-steps", "N", "live: steps fetched from the collector at start", "50");
  parser.AddFlag("max-operators", "N",
                 "operators loaded at most (oldest steps dropped; the window says so)", "4000000");
  parser.AddFlag("steps", "FIRST-LAST",
                 "--data-dir: load only these steps (their operators up to --max-operators), "
                 "e.g. 100-120");
  // TLS and the read token for the Commands service, CURVE for the feed and
  // snapshot sockets: the same flags and variables as the trainscope CLI.
  client::ClientSecurity::AddFlags(&parser);
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope-viewer --feed tcp://127.0.0.1:7071 --job demo --collector 127.0.0.1:7070\n"
      "  trainscope-viewer --data-dir /tmp/ts-data --job demo --render marey --out marey.png\n"
      "  trainscope-viewer --data-dir /tmp/ts-data --job demo --render monitoring --item 1432 "
      "--iteration 300 --out item.png\n"
      "  QT_QPA_PLATFORM=offscreen trainscope-viewer --synthetic --render each --out "
      "docs/demo.png\n"
      "Environment: TRAINSCOPE_TOKEN (the job's token); QT_QPA_PLATFORM=offscreen is set by "
      "--render when unset.");
  return parser;
}

absl::StatusOr<std::vector<uint32_t>> ParseRanks(const std::string& text) {
  std::vector<uint32_t> ranks;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> bounds = absl::StrSplit(part, '-');
    uint32_t low = 0, high = 0;
    if (bounds.size() > 2 || !absl::SimpleAtoi(bounds[0], &low) ||
        !absl::SimpleAtoi(bounds.back(), &high) || high < low || high - low > 1'000'000) {
      return absl::InvalidArgumentError(absl::StrCat("--ranks: cannot read '", part, "' in '", text,
                                                     "' (expected e.g. 0,2,4-7)"));
    }
    for (uint32_t r = low; r <= high; ++r) ranks.push_back(r);
  }
  if (ranks.empty()) return absl::InvalidArgumentError("--ranks: no rank given");
  return ranks;
}

absl::Status Fail(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

struct Loaded {
  JobData data;
  std::string source;
  bool live = false;
  client::ClientSecurity security;
};

absl::StatusOr<Loaded> LoadSource(const base::ParsedArgs& args) {
  Loaded loaded;
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
      const std::string value = *args.Value("steps");
      const std::vector<std::string> ends = absl::StrSplit(value, '-');
      uint64_t first = 0, last = 0;
      if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &first) ||
          !absl::SimpleAtoi(ends[1], &last) || last < first) {
        return Fail(absl::StrCat("--steps ", value,
                                 ": expected FIRST-LAST, two step numbers, e.g. 100-120"));
      }
      options.steps = std::make_pair(first, last);
    }
    absl::StatusOr<JobData> data = LoadStoredJob(dir, job, options);
    if (!data.ok()) return data.status();
    if (data->coverage.cut()) {
      std::fprintf(stderr, "trainscope-viewer: %s\n", data->coverage.Notice().c_str());
    }
    loaded.data = std::move(*data);
    loaded.source = dir.string();
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

// A list for an error message: the first `max` values, then how many more.
template <typename T>
std::string Listed(const std::vector<T>& values, size_t max = 40) {
  std::vector<T> shown(values.begin(), values.begin() + std::min(values.size(), max));
  std::string out = absl::StrJoin(shown, ", ");
  if (values.size() > max) absl::StrAppend(&out, ", ... (", values.size() - max, " more)");
  return out;
}

// --item and --iteration. `loaded` is false for a live window, whose loss
// data arrives later: the item is then only chosen (and fetched when known).
absl::Status ApplyLossFlags(const base::ParsedArgs& args, bool loaded, LossModel* loss) {
  if (args.Has("item")) {
    absl::StatusOr<std::optional<int64_t>> parsed = args.Int("item", 0, INT64_MAX);
    if (!parsed.ok()) return parsed.status();
    const uint64_t item = static_cast<uint64_t>(**parsed);
    if (loaded && !loss->has_data()) {
      return Fail(absl::StrCat("--item ", item, ": the job has ", LossModel::kNoDataText));
    }
    if (loaded && loss->FindItem(item) == nullptr) {
      const LossStateRecord& state = *loss->state();
      std::vector<uint64_t> items;
      for (const LossModel::Cell& cell : loss->Cells()) items.push_back(cell.item);
      const size_t top = std::max<size_t>(state.top_n, items.size());
      return Fail(absl::StrCat("--item ", item, ": item ", item,
                               " is not among the job's difficult items (top ", top, " of epoch ",
                               state.epoch, "): ", Listed(items)));
    }
    loss->Choose(item);
  }
  if (args.Has("map-scale")) {
    const std::string scale = *args.Value("map-scale");
    bool known = false;
    for (MapScaling s : {MapScaling::kPerIteration, MapScaling::kShared, MapScaling::kLog}) {
      if (scale == MapScalingName(s)) {
        loss->SetMapScaling(s);
        known = true;
      }
    }
    if (!known) {
      return Fail(absl::StrCat("--map-scale: unknown scale '", scale,
                               "' (expected per-iteration, shared or log)"));
    }
  }
  if (args.Has("iteration")) {
    absl::StatusOr<std::optional<int64_t>> parsed = args.Int("iteration", 0, INT64_MAX);
    if (!parsed.ok()) return parsed.status();
    const uint64_t iteration = static_cast<uint64_t>(**parsed);
    if (!loaded) {
      return Fail(absl::StrCat("--iteration ", iteration,
                               ": a live window has no snapshots at start; use it with --render "
                               "or --data-dir"));
    }
    if (!loss->has_data()) {
      return Fail(
          absl::StrCat("--iteration ", iteration, ": the job has ", LossModel::kNoDataText));
    }
    const uint64_t item = *loss->chosen_item();
    std::vector<uint64_t> iterations;
    for (const ItemSnapshotRecord& s : loss->ChosenSnapshots()) iterations.push_back(s.iteration);
    if (iterations.empty()) {
      return Fail(absl::StrCat("--iteration ", iteration, ": item ", item,
                               " has no map snapshots (maps are taken when a selected item is in "
                               "a batch)"));
    }
    if (!loss->SetIteration(iteration)) {
      return Fail(absl::StrCat("--iteration ", iteration, ": item ", item,
                               " has no snapshot at iteration ", iteration,
                               "; its snapshots are at iterations ", Listed(iterations)));
    }
  }
  return absl::OkStatus();
}

// The cluster views' flags (--topology, --level, --frame-steps, --frame,
// --select-ranks, --select-link, --mesh-width).
absl::Status ApplyClusterFlags(const base::ParsedArgs& args, ViewerState* state) {
  if (args.Has("topology")) {
    const std::string path = *args.Value("topology");
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat("--topology ", path, ": cannot read it"));
    std::stringstream text;
    text << in.rdbuf();
    std::map<std::string, std::string> racks;
    std::string error;
    if (!ClusterHierarchy::ParseTopology(text.str(), &racks, &error)) {
      return Fail(absl::StrCat("--topology ", path, ": ", error));
    }
    state->hierarchy.SetRacks(racks);
  }
  if (args.Has("level")) {
    const std::optional<ClusterLevel> level = ParseClusterLevel(*args.Value("level"));
    if (!level.has_value()) {
      return Fail(absl::StrCat("--level: unknown level '", *args.Value("level"),
                               "' (expected device, host or rack)"));
    }
    for (ClusterView* view : std::initializer_list<ClusterView*>{
             &state->topology, &state->trend, &state->chord, &state->hilbert_ring}) {
      view->SetLevel(*level);
    }
  }
  auto frame_steps = args.Int("frame-steps", 1, 1'000'000);
  if (!frame_steps.ok()) return frame_steps.status();
  if (frame_steps->has_value()) state->trend.SetFrameSteps(static_cast<uint32_t>(**frame_steps));
  if (args.Has("frame")) {
    auto frame = args.Int("frame", 0, 1'000'000);
    if (!frame.ok()) return frame.status();
    const size_t frames = state->trend.frame_count();
    if (static_cast<size_t>(**frame) >= frames) {
      return Fail(absl::StrCat("--frame ", **frame, ": the trend view has ", frames,
                               " frames (0 to ", frames == 0 ? 0 : frames - 1, ")"));
    }
    state->trend.SetFrame(static_cast<size_t>(**frame));
  }
  if (args.Has("select-ranks")) {
    absl::StatusOr<std::vector<uint32_t>> ranks = ParseRanks(*args.Value("select-ranks"));
    if (!ranks.ok()) return ranks.status();
    state->selection.SelectDevices(*ranks);
  }
  if (args.Has("select-link")) {
    const std::string value = *args.Value("select-link");
    const std::vector<std::string> ends = absl::StrSplit(value, ':');
    uint32_t src = 0, dst = 0;
    if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &src) || !absl::SimpleAtoi(ends[1], &dst)) {
      return Fail(absl::StrCat("--select-link ", value, ": expected SRC:DST, two rank numbers"));
    }
    state->selection.SelectLink(src, dst);
  }
  if (args.Has("mesh-width")) {
    auto width = args.Int("mesh-width", 1, 1'000'000);
    if (!width.ok()) return width.status();
    const uint32_t w = static_cast<uint32_t>(**width);
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> mesh;
    for (const auto& device : state->traffic.matrix().devices)
      mesh[device.rank] = {device.rank % w, device.rank / w};
    state->hilbert_ring.SetCoordinates(mesh);
  }
  state->SyncSelection();
  return absl::OkStatus();
}

// Applies the view flags (--step, --ranks, --alert, ...) to the loaded state.
absl::Status ApplyViewFlags(const base::ParsedArgs& args, bool loss_loaded, ViewerState* state) {
  if (absl::Status status = ApplyLossFlags(args, loss_loaded, &state->loss); !status.ok()) {
    return status;
  }
  if (absl::Status status = ApplyClusterFlags(args, state); !status.ok()) return status;
  const std::string tab = args.Value("tab").value_or("performance");
  if (tab != "performance" && tab != "loss") {
    return Fail(absl::StrCat("--tab: unknown tab '", tab, "' (expected performance or loss)"));
  }
  const std::string grouping = args.Value("grouping").value_or("none");
  if (grouping == "stage") {
    state->marey.SetGrouping(MareyModel::Grouping::kStage);
  } else if (grouping == "host") {
    state->marey.SetGrouping(MareyModel::Grouping::kHost);
  } else if (grouping != "none") {
    return Fail(
        absl::StrCat("--grouping: unknown mode '", grouping, "' (expected none, stage or host)"));
  }
  for (const std::string& group : args.Values("expand")) state->marey.SetExpanded(group, true);
  if (args.Bool("raw")) state->marey.SetRawTimestamps(true);
  const std::string cpu_rows = args.Value("cpu-rows").value_or("show");
  if (cpu_rows != "show" && cpu_rows != "hide") {
    return Fail(absl::StrCat("--cpu-rows: unknown mode '", cpu_rows, "' (expected show or hide)"));
  }
  state->marey.SetShowCpuRows(cpu_rows == "show");
  if (args.Has("ranks")) {
    absl::StatusOr<std::vector<uint32_t>> ranks = ParseRanks(*args.Value("ranks"));
    if (!ranks.ok()) return ranks.status();
    state->marey.SetRankFilter(*ranks);
    if (state->marey.Rows().empty()) {
      return Fail(
          absl::StrCat("--ranks ", *args.Value("ranks"), ": none of these ranks has operators"));
    }
  }
  if (args.Has("step")) {
    absl::StatusOr<std::optional<int64_t>> step = args.Int("step", 0, INT64_MAX);
    if (!step.ok()) return step.status();
    const auto& newest = state->selection.newest_step();
    if (!newest.has_value())
      return Fail(absl::StrCat("--step ", **step, ": the job has no steps yet"));
    if (static_cast<uint64_t>(**step) > *newest) {
      return Fail(absl::StrCat("--step ", **step, ": the job's newest step is ", *newest));
    }
    state->SelectStep(static_cast<uint64_t>(**step));
  }
  if (args.Has("alert")) {
    absl::StatusOr<std::optional<int64_t>> row = args.Int("alert", 0, 1'000'000);
    if (!row.ok()) return row.status();
    if (state->SelectAlert(static_cast<size_t>(**row)) == nullptr) {
      return Fail(
          absl::StrCat("--alert ", **row, ": the job has ", state->alerts.size(), " alerts"));
    }
  }
  if (args.Has("marey-steps")) {
    absl::StatusOr<std::optional<int64_t>> steps = args.Int("marey-steps", 0, 100'000);
    if (!steps.ok()) return steps.status();
    if (**steps == 0) {
      state->marey.ResetZoom();
    } else if (args.Has("step")) {
      state->marey.ShowAroundStep(*state->selection.selected_step(),
                                  static_cast<uint32_t>(**steps));
    } else {
      state->marey.FollowNewest(static_cast<uint32_t>(**steps));
    }
  }
  if (args.Has("from-ms") || args.Has("to-ms")) {
    auto from = args.Double("from-ms", 0, 1e12);
    auto to = args.Double("to-ms", 0, 1e12);
    if (!from.ok()) return from.status();
    if (!to.ok()) return to.status();
    state->marey.SetViewport(1000, 600);
    state->marey.Draw();
    const int64_t origin = state->marey.origin_ns();
    const int64_t start =
        from->has_value() ? origin + static_cast<int64_t>(**from * 1e6) : state->marey.view_start();
    const int64_t end =
        to->has_value() ? origin + static_cast<int64_t>(**to * 1e6) : state->marey.view_end();
    if (end <= start) return Fail("--to-ms must be after --from-ms");
    state->marey.SetTimeRange(start, end);
  }
  return absl::OkStatus();
}

int Render(const base::ParsedArgs& args, ViewerState* state, const MainWindow::Config& config) {
  const std::string view = *args.Value("render");
  if (!args.Has("out")) {
    std::fprintf(stderr, "trainscope-viewer: --render needs --out FILE.png\n");
    return 2;
  }
  auto width = args.Int("width", 320, 16384);
  auto height = args.Int("height", 200, 16384);
  for (const auto* value : {&width, &height}) {
    if (!value->ok()) {
      std::fprintf(stderr, "trainscope-viewer: %s\n",
                   std::string(value->status().message()).c_str());
      return 2;
    }
  }
  const std::string out = *args.Value("out");
  std::vector<std::pair<std::string, std::string>> targets;  // (view, file)
  if (view == "each") {
    const std::string stem = out.size() > 4 && out.substr(out.size() - 4) == ".png"
                                 ? out.substr(0, out.size() - 4)
                                 : out;
    for (const std::string& v : OffscreenRenderer::Views())
      targets.push_back({v, stem + "-" + v + ".png"});
  } else {
    targets.push_back({view, out});
  }
  for (const auto& [name, file] : targets) {
    absl::StatusOr<QImage> image = OffscreenRenderer::Render(state, name, static_cast<int>(**width),
                                                             static_cast<int>(**height), config);
    if (!image.ok()) {
      std::fprintf(stderr, "trainscope-viewer: %s\n",
                   std::string(image.status().message()).c_str());
      return 2;
    }
    if (!image->save(QString::fromStdString(file), "PNG")) {
      std::fprintf(stderr, "trainscope-viewer: --out %s: cannot write the PNG there\n",
                   file.c_str());
      return 1;
    }
    std::printf("wrote %s (%s, %dx%d)\n", file.c_str(), name.c_str(), image->width(),
                image->height());
  }
  return 0;
}

}  // namespace

int ViewerApp::Main(int argc, char** argv) {
  base::ArgParser parser = MakeParser();
  std::vector<std::string> arguments(argv + 1, argv + argc);
  absl::StatusOr<base::ParsedArgs> args = parser.Parse(arguments);
  if (!args.ok()) {
    std::fprintf(stderr, "trainscope-viewer: %s\n(see trainscope-viewer --help)\n",
                 std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->help_requested()) {
    std::printf("%s", parser.Usage().c_str());
    return 0;
  }
  const bool render = args->Has("render");
  if (render && std::getenv("QT_QPA_PLATFORM") == nullptr)
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
  absl::StatusOr<Loaded> loaded = LoadSource(*args);
  if (!loaded.ok()) {
    std::fprintf(stderr, "trainscope-viewer: %s\n", std::string(loaded.status().message()).c_str());
    return loaded.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  QApplication app(argc, argv);
  ViewerState state;
  state.Load(loaded->data);
  if (absl::Status status = ApplyViewFlags(*args, !loaded->live || render, &state); !status.ok()) {
    std::fprintf(stderr, "trainscope-viewer: %s\n", std::string(status.message()).c_str());
    return 2;
  }
  MainWindow::Config config;
  config.source = loaded->source;
  config.load_notice = loaded->data.coverage.Notice();
  config.controls.job_id = loaded->data.job.job_id;
  config.show_loss_tab = args->Has("tab") ? *args->Value("tab") == "loss"
                                          : args->Has("item") || args->Has("iteration");
  config.controls.collector = args->Value("collector").value_or("");
  if (config.controls.collector.empty() && loaded->live) {
    // The Commands service sits next to the feed by default.
    config.controls.collector =
        client::ConnectionOptions::CollectorNextToFeed(args->Value("feed").value_or(""));
  }
  config.controls.token_sources.flag = args->Value("token");
  if (args->Has("token-file")) config.controls.token_sources.file = *args->Value("token-file");
  if (const char* env = std::getenv("TRAINSCOPE_TOKEN")) config.controls.token_sources.env = env;
  if (args->Has("data-dir")) config.controls.token_sources.data_dir = *args->Value("data-dir");
  config.controls.security = loaded->security;
  if (render) return Render(*args, &state, config);

  std::unique_ptr<FeedCoalescer> coalescer;
  std::unique_ptr<LiveFeedClient> client;
  if (loaded->live) {
    coalescer = std::make_unique<FeedCoalescer>();
    const std::string feed = args->Value("feed").value_or("");
    client = std::make_unique<LiveFeedClient>(
        LiveFeedClient::Options{
            feed,
            args->Value("snapshot").value_or(client::ConnectionOptions::SnapshotNextToFeed(feed)),
            loaded->data.job.job_id,
            {},
            loaded->security},
        coalescer.get());
    client->Start();
    LiveFeedClient* feed_client = client.get();
    config.request_item = [feed_client](uint64_t item) { feed_client->RequestItem(item); };
    config.link = [feed_client] { return feed_client->link(); };
  }
  MainWindow window(&state, coalescer.get(), config);
  window.show();
  const int code = app.exec();
  if (client) client->Stop();
  return code;
}

}  // namespace trainscope::viewer

#include "trainscope/viewer/widgets/viewer_app.h"

#include <QApplication>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/viewer/live_feed_client.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "trainscope/viewer/widgets/viewer_flags.h"
#include "trainscope/viewer/widgets/viewer_source.h"

namespace trainscope::viewer {
namespace {

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

// The range statistics' flags: --range-steps picks the steps (which must
// overlap the loaded ones), --range-operator outlines an operator of the
// range in the Marey graph.
absl::Status ApplyRangeFlags(const base::ParsedArgs& args, ViewerState* state) {
  RangeStatsModel& range = state->range_stats;
  const std::map<uint64_t, StepRecord>& steps = state->marey.store().steps();
  if (args.Has("range-steps")) {
    absl::StatusOr<StepSpan> span = ParseStepSpan("--range-steps", *args.Value("range-steps"));
    if (!span.ok()) return span.status();
    if (steps.empty() || span->last < steps.begin()->first ||
        span->first > steps.rbegin()->first) {
      return Fail(absl::StrCat("--range-steps ", *args.Value("range-steps"), ": the job holds ",
                               steps.empty() ? std::string("no steps")
                                             : absl::StrCat("steps ", steps.begin()->first, "-",
                                                            steps.rbegin()->first)));
    }
    range.SelectSteps(span->first, span->last);
  }
  if (args.Has("range-operator")) {
    const std::string name = *args.Value("range-operator");
    range.Update(state->marey.store(), state->names, 0);
    const uint32_t id = state->names.Find(name);  // 0: never interned
    const int row = id == 0 ? -1 : range.top().Find(id);
    if (row < 0) {
      return Fail(absl::StrCat("--range-operator ", name, ": no operator of that name in ",
                               range.Title()));
    }
    const TopOperators::Row& op = range.top().rows()[static_cast<size_t>(row)];
    state->marey.FocusOn(op.ranks, op.name_id, std::nullopt, std::nullopt,
                         MareyModel::FocusRows::kPlain);
  }
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
  if (args.Has("search")) {
    // As typing TEXT and pressing F3 N times.
    const std::string text = *args.Value("search");
    state->search.SetQuery(text);
    absl::StatusOr<std::optional<int64_t>> match = args.Int("search-match", 1, INT64_MAX);
    if (!match.ok()) return match.status();
    const size_t matches = state->search.matches().size();
    if (matches == 0) return Fail(absl::StrCat("--search ", text, ": ", state->search.Summary()));
    if (static_cast<uint64_t>(**match) > matches) {
      return Fail(absl::StrCat("--search-match ", **match, ": '", text, "' has ", matches,
                               matches == 1 ? " match" : " matches"));
    }
    for (int64_t i = 0; i < **match; ++i) state->search.Jump(1, &state->selection, &state->marey);
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
  return ApplyRangeFlags(args, state);
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
  base::ArgParser parser = ViewerFlags();
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
  absl::StatusOr<ViewerSource> loaded = LoadViewerSource(*args);
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
  config.load_steps = loaded->load_steps;
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

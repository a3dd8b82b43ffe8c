#include "trainscope/viewer/viewer_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "trainscope/viewer/synthetic_job.h"

namespace trainscope::viewer {
namespace {

TEST(ViewerStateTest, LoadFillsEveryModelAndFollowsTheNewestStep) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 4;
  options.steps = 5;
  state.Load(GenerateSyntheticJob(options));
  EXPECT_EQ(state.overview.step_count(), 5u);
  EXPECT_EQ(state.marey.Rows().size(), 4u);
  EXPECT_EQ(state.alerts.size(), 1u);
  EXPECT_EQ(state.selection.selected_step(), 5u);
  EXPECT_EQ(state.overview.selected_step(), 5u);
  ASSERT_EQ(state.jobs.Rows().size(), 1u);
  EXPECT_TRUE(state.jobs.Rows()[0].steps_per_second.has_value());
}

TEST(ViewerStateTest, LiveStepsMoveTheSelectionOnlyWhenFollowing) {
  ViewerState state;
  FeedCoalescer::Delta first;
  first.steps.push_back({1, 0, 100, {}});
  state.Apply(std::move(first));
  EXPECT_EQ(state.overview.selected_step(), 1u);
  state.SelectStep(1);
  FeedCoalescer::Delta second;
  second.steps.push_back({2, 100, 200, {}});
  state.Apply(std::move(second));
  EXPECT_EQ(state.overview.selected_step(), 1u);
  state.Follow();
  EXPECT_EQ(state.overview.selected_step(), 2u);
}

TEST(ViewerStateTest, SelectingAnAlertPinsItsStepInEveryView) {
  ViewerState state;
  SyntheticJobOptions options;
  options.steps = 6;
  options.straggler = 3;
  options.straggler_from_step = 2;
  state.Load(GenerateSyntheticJob(options));
  ASSERT_NE(state.SelectAlert(0), nullptr);
  EXPECT_EQ(state.selection.selected_step(), 2u);
  EXPECT_EQ(state.overview.selected_step(), 2u);
  EXPECT_FALSE(state.selection.following());
}

// The rack each agent said in Hello (RankStatus.rack on the feed) places its
// device in the worker -> host -> rack hierarchy, with no --topology file:
// two ranks of one host in two racks (what a test job on one machine gives
// with TRAINSCOPE_RACK per rank) are in two racks; a rank that named none
// takes its host's.
TEST(ViewerStateTest, RanksRacksFromTheFeedGroupTheirDevices) {
  ViewerState state;
  FeedCoalescer::Delta delta;
  JobRecord job;
  job.job_id = "j";
  job.ranks = {{0, "node-0", 10, true, 0, "rack-a"},
               {1, "node-0", 11, true, 0, "rack-b"},
               {2, "node-1", 12, true, 0, "rack-b"},
               {3, "node-1", 13, true, 0, ""},
               {4, "node-2", 14, true, 0, ""}};
  delta.job = job;
  state.Apply(std::move(delta));
  const auto& racks = state.hierarchy.units(ClusterLevel::kRack);
  std::map<std::string, std::set<uint32_t>> members;
  const TrafficModel::Matrix& m = state.traffic.matrix();
  for (const auto& rack : racks) {
    for (size_t d : rack.devices) members[rack.name].insert(m.devices[d].rank);
  }
  EXPECT_EQ(members,
            (std::map<std::string, std::set<uint32_t>>{
                {"rack-a", {0}}, {"rack-b", {1, 2, 3}}, {ClusterHierarchy::kNoRack, {4}}}));
}

// Linked highlighting: a slow_link alert selects its link, and the Marey
// graph, the overview's bars and the alerts list all show its two devices.
TEST(ViewerStateTest, ASlowLinksAlertHighlightsItsDevicesInEveryView) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 8;
  options.steps = 12;
  options.slow_link = std::make_pair(2u, 5u);
  state.Load(GenerateSyntheticJob(options));
  std::optional<size_t> row;
  for (const AlertsModel::Row& r : state.alerts.Rows()) {
    if (r.rule == "slow_link") row = r.index;
  }
  ASSERT_TRUE(row.has_value());
  ASSERT_NE(state.SelectAlert(*row), nullptr);
  EXPECT_EQ(state.selection.selected_link(), std::make_pair(2u, 5u));
  // Overview: exactly the two devices' bars.
  state.overview.SetViewport(900, 700);
  std::set<uint32_t> bars;
  for (const auto& bar : state.overview.Bars()) {
    if (bar.selected) bars.insert(bar.rank);
  }
  EXPECT_EQ(bars, (std::set<uint32_t>{2, 5}));
  // Alerts: every row naming rank 2 or 5, and only those.
  for (const AlertsModel::Row& r : state.alerts.Rows()) {
    const Alert* alert = state.alerts.AtRow(r.index);
    ASSERT_NE(alert, nullptr);
    const bool names = std::count(alert->ranks.begin(), alert->ranks.end(), 2u) +
                           std::count(alert->ranks.begin(), alert->ranks.end(), 5u) >
                       0;
    EXPECT_EQ(r.selected_devices, names) << r.rule;
  }
  // Marey: the two devices' rows tinted (the alert's focus tints them too;
  // the labels say which are selected).
  state.marey.SetViewport(1200, 700);
  size_t blue_labels = 0;
  for (const Text& t : state.marey.Draw().texts) blue_labels += t.color == kSelectColor;
  EXPECT_EQ(blue_labels, 2u);
  // Selecting devices elsewhere moves every view.
  state.selection.SelectDevices({7});
  state.SyncSelection();
  bars.clear();
  for (const auto& bar : state.overview.Bars()) {
    if (bar.selected) bars.insert(bar.rank);
  }
  EXPECT_EQ(bars, (std::set<uint32_t>{7}));
}

TEST(ViewerStateTest, ResetDeltaReplacesWhatWasShown) {
  ViewerState state;
  state.Load(GenerateSyntheticJob({}));
  FeedCoalescer::Delta reset;
  reset.reset = true;
  reset.steps.push_back({100, 0, 10, {}});
  state.Apply(std::move(reset));
  EXPECT_EQ(state.overview.step_count(), 1u);
  EXPECT_EQ(state.marey.operator_count(), 0u);
  EXPECT_EQ(state.alerts.size(), 0u);
}

TEST(ViewerStateTest, AStepPickedInTheOverviewMovesTheMareyGraphAndFollowBringsItBack) {
  ViewerState state;
  SyntheticJobOptions options;
  options.steps = 60;
  options.straggler = 3;
  options.straggler_from_step = 20;
  const JobData job = GenerateSyntheticJob(options);
  state.Load(job);
  state.marey.SetViewport(1000, 600);
  const auto step_of = [&](uint64_t n) {
    for (const StepRecord& s : job.steps) {
      if (s.step == n) return s;
    }
    return StepRecord{};
  };
  state.marey.Draw();
  // Following: the newest steps are in view, the first are not.
  EXPECT_GT(state.marey.view_start(), step_of(40).start_ns);
  EXPECT_GE(state.marey.view_end(), step_of(60).end_ns);
  // A click on step 10 in the overview.
  state.SelectStep(10);
  state.marey.Draw();
  EXPECT_LE(state.marey.view_start(), step_of(10).start_ns);
  EXPECT_GE(state.marey.view_end(), step_of(10).end_ns);
  EXPECT_LT(state.marey.view_end(), step_of(20).start_ns);
  // A click on an operator in the Marey graph selects its step, the graph stays.
  const int64_t before = state.marey.view_start();
  state.SelectStep(11, /*move_marey=*/false);
  state.marey.Draw();
  EXPECT_EQ(state.marey.view_start(), before);
  // An alert zooms to its operator; following afterwards goes back to the
  // newest steps and drops the alert's highlight.
  ASSERT_NE(state.SelectAlert(0), nullptr);
  EXPECT_FALSE(state.marey.Draw().overlay_rects.empty());
  state.Follow();
  state.marey.Draw();
  EXPECT_GT(state.marey.view_start(), step_of(40).start_ns);
  EXPECT_TRUE(state.marey.Draw().overlay_rects.empty());
}

TEST(ViewerStateTest, SelectingAnotherStepClearsAnAlertsStaleHighlight) {
  ViewerState state;
  SyntheticJobOptions options;
  options.steps = 10;
  options.straggler = 2;
  options.straggler_from_step = 4;
  state.Load(GenerateSyntheticJob(options));
  state.marey.SetViewport(1000, 600);
  const Alert* alert = state.SelectAlert(0);
  ASSERT_NE(alert, nullptr);
  EXPECT_FALSE(state.marey.Draw().overlay_rects.empty());
  state.SelectStep(alert->step);  // its own step: still highlighted
  EXPECT_FALSE(state.marey.Draw().overlay_rects.empty());
  state.SelectStep(alert->step + 1);
  EXPECT_TRUE(state.marey.Draw().overlay_rects.empty());
}

TEST(ViewerStateTest, APartialLastStepOnlyOneRankClosedIsNotFollowed) {
  ViewerState state;
  FeedCoalescer::Delta delta;
  for (uint64_t s = 1; s <= 3; ++s) {
    StepRecord step{s, static_cast<int64_t>(s) * 100, static_cast<int64_t>(s) * 100 + 90, {}};
    for (uint32_t r = 0; r < 4; ++r) step.devices.push_back({r});
    delta.steps.push_back(step);
  }
  StepRecord partial{4, 400, 490, {}};
  partial.devices.push_back({0});
  delta.steps.push_back(partial);
  state.Apply(std::move(delta));
  EXPECT_EQ(state.overview.step_count(), 4u);  // drawn in the lines
  EXPECT_EQ(state.selection.selected_step(), 3u);
  ASSERT_EQ(state.overview.Bars().size(), 4u);  // the bars show every rank
  // A later full step is followed again.
  FeedCoalescer::Delta next;
  StepRecord full{5, 500, 590, {}};
  for (uint32_t r = 0; r < 4; ++r) full.devices.push_back({r});
  next.steps.push_back(full);
  state.Apply(std::move(next));
  EXPECT_EQ(state.selection.selected_step(), 5u);
}

TEST(ViewerStateTest, APartialLastStepListingEveryRankIsNotFollowed) {
  // As a real 4-rank job's stored last step reads (only rank 0 ran it):
  // every rank listed, the others without their end mark (incomplete).
  ViewerState state;
  FeedCoalescer::Delta delta;
  for (uint64_t s = 1; s <= 4; ++s) {
    StepRecord step{s, static_cast<int64_t>(s) * 100, static_cast<int64_t>(s) * 100 + 90, {}};
    for (uint32_t r = 0; r < 4; ++r) {
      DeviceStepRecord device{r};
      device.complete = s < 4 || r == 0;
      step.devices.push_back(device);
    }
    delta.steps.push_back(step);
  }
  state.Apply(std::move(delta));
  EXPECT_EQ(state.overview.step_count(), 4u);
  EXPECT_EQ(state.selection.selected_step(), 3u);
}

TEST(ViewerStateTest, ArrowKeysStepThroughTheStepsAndMoveTheMareyGraph) {
  ViewerState state;
  SyntheticJobOptions options;
  options.steps = 30;
  state.Load(GenerateSyntheticJob(options));
  state.marey.SetViewport(1000, 600);
  EXPECT_EQ(state.selection.selected_step(), 30u);
  EXPECT_FALSE(state.StepBy(1));  // already the newest
  EXPECT_TRUE(state.StepBy(-1));
  EXPECT_EQ(state.selection.selected_step(), 29u);
  EXPECT_FALSE(state.selection.following());
  EXPECT_TRUE(state.StepBy(-10));
  EXPECT_EQ(state.overview.selected_step(), 19u);
  EXPECT_EQ(state.marey.time_window().mode(), MareyTimeWindow::Mode::kAroundStep);
  EXPECT_EQ(state.marey.time_window().anchor_step(), 19u);
  EXPECT_FALSE(state.StepBy(-19));  // past the first step
  EXPECT_EQ(state.selection.selected_step(), 19u);
}

TEST(ViewerStateTest, AnOutageGreysTheJobAndBreaksTheOverviewUntilTheFeedIsBack) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 4;
  options.steps = 6;
  JobData data = GenerateSyntheticJob(options);
  data.job.state = JobStateKind::kRunning;
  state.Load(data);
  constexpr int64_t kS = 1'000'000'000;
  const int64_t t0 = data.steps.back().end_ns;
  ConnectionModel connection;
  LinkReport live;
  live.phase = LinkReport::Phase::kFollowing;
  live.last_contact_ns = live.last_update_ns = t0;
  connection.Observe(live, t0 + kS);
  state.ShowConnection(connection);
  ASSERT_EQ(state.jobs.Rows().size(), 1u);
  EXPECT_FALSE(state.jobs.Rows()[0].stale);
  EXPECT_TRUE(state.overview.gaps().empty());

  LinkReport gone = live;
  gone.phase = LinkReport::Phase::kRetrying;
  gone.attempts = 3;
  connection.Observe(gone, t0 + 40 * kS);
  state.ShowConnection(connection);
  const JobsModel::Row row = state.jobs.Rows()[0];
  EXPECT_TRUE(row.stale);
  EXPECT_EQ(row.state, "last seen running 40 s ago");
  EXPECT_FALSE(row.steps_per_second.has_value());
  ASSERT_EQ(state.overview.gaps().size(), 1u);
  EXPECT_EQ(state.overview.gaps()[0].start_ns, t0);
  EXPECT_EQ(state.overview.gaps()[0].end_ns, 0);  // still going on

  LinkReport back = live;
  back.last_contact_ns = back.last_update_ns = t0 + 60 * kS;
  connection.Observe(back, t0 + 60 * kS);
  state.ShowConnection(connection);
  EXPECT_FALSE(state.jobs.Rows()[0].stale);
  EXPECT_EQ(state.jobs.Rows()[0].state, "running");
  ASSERT_EQ(state.overview.gaps().size(), 1u);
  EXPECT_EQ(state.overview.gaps()[0].end_ns, t0 + 60 * kS);
}

// A cleared alert's device loses its marks (the Marey graph's red cross, the
// topology's red outline); the list keeps the alert as cleared and the
// overview keeps its step mark.
TEST(ViewerStateTest, AClearedAlertNoLongerMarksItsDevice) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 4;
  options.steps = 6;
  options.straggler = -1;
  state.Load(GenerateSyntheticJob(options));
  state.marey.SetViewport(1000, 600);
  state.topology.SetViewport(800, 800);
  // The legend has a cross of its own: count the crosses beyond it.
  const size_t legend = state.marey.Draw().crosses.size();
  auto marked = [&] {
    size_t topology = 0;
    for (const TopologyLayout::Node& node : state.topology.nodes()) topology += node.alert;
    return std::make_pair(state.marey.Draw().crosses.size() - legend, topology);
  };
  ASSERT_EQ(marked(), std::make_pair(size_t{0}, size_t{0}));

  Alert raised;
  raised.alert_id = 7;
  raised.step = 3;
  raised.rule = "straggler";
  raised.cause = 1;
  raised.ranks = {1, 0, 2, 3};
  FeedCoalescer::Delta raise;
  raise.alerts.push_back(raised);
  state.Apply(std::move(raise));
  EXPECT_EQ(marked(), std::make_pair(size_t{1}, size_t{1}));

  Alert cleared = raised;
  cleared.state = AlertState::kCleared;
  cleared.step = 5;
  FeedCoalescer::Delta clear;
  clear.alerts.push_back(cleared);
  state.Apply(std::move(clear));
  EXPECT_EQ(marked(), std::make_pair(size_t{0}, size_t{0}));
  ASSERT_EQ(state.alerts.Rows().size(), 1u);
  EXPECT_TRUE(state.alerts.Rows()[0].cleared);
  EXPECT_EQ(state.alerts.AlertSteps(), std::vector<uint64_t>{3});
}

}  // namespace
}  // namespace trainscope::viewer

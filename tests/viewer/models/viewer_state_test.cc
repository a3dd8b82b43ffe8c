#include "trainscope/viewer/viewer_state.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace trainscope::viewer

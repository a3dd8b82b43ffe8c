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

}  // namespace
}  // namespace trainscope::viewer

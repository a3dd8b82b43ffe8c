#include "trainscope/viewer/selection_state.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(SelectionStateTest, FollowsNewestStepByDefault) {
  SelectionState selection;
  EXPECT_FALSE(selection.selected_step().has_value());
  selection.OnStepClosed(3);
  selection.OnStepClosed(4);
  EXPECT_TRUE(selection.following());
  EXPECT_EQ(selection.selected_step(), 4u);
  selection.OnStepClosed(2);  // late, older: ignored
  EXPECT_EQ(selection.selected_step(), 4u);
}

TEST(SelectionStateTest, PinnedStaysUntilFollowAgain) {
  SelectionState selection;
  selection.OnStepClosed(10);
  const uint64_t before = selection.version();
  selection.Pin(7);
  EXPECT_GT(selection.version(), before);
  EXPECT_FALSE(selection.following());
  selection.OnStepClosed(11);
  selection.OnStepClosed(12);
  EXPECT_EQ(selection.selected_step(), 7u);
  EXPECT_EQ(selection.newest_step(), 12u);
  selection.Follow();
  EXPECT_TRUE(selection.following());
  EXPECT_EQ(selection.selected_step(), 12u);
}

TEST(SelectionStateTest, VersionUnchangedWhenNothingChanges) {
  SelectionState selection;
  selection.OnStepClosed(1);
  const uint64_t version = selection.version();
  selection.Follow();
  selection.OnStepClosed(1);
  EXPECT_EQ(selection.version(), version);
}

TEST(SelectionStateTest, DevicesAndLinkAreSelectedTogetherAndVersioned) {
  SelectionState selection;
  const uint64_t v0 = selection.devices_version();
  selection.SelectLink(12, 13);
  EXPECT_GT(selection.devices_version(), v0);
  EXPECT_EQ(selection.selected_link(), std::make_pair(12u, 13u));
  EXPECT_TRUE(selection.IsSelected(12));
  EXPECT_TRUE(selection.IsSelected(13));
  EXPECT_FALSE(selection.IsSelected(14));
  const uint64_t v1 = selection.devices_version();
  selection.SelectLink(12, 13);  // the same: no change
  EXPECT_EQ(selection.devices_version(), v1);
  selection.SelectDevices({4, 5, 4});  // a lasso drops the link
  EXPECT_FALSE(selection.selected_link().has_value());
  EXPECT_EQ(selection.selected_ranks(), (std::set<uint32_t>{4, 5}));
  EXPECT_GT(selection.devices_version(), v1);
  selection.ClearDevices();
  EXPECT_TRUE(selection.selected_ranks().empty());
  // The step selection is untouched by device selections.
  selection.OnStepClosed(3);
  EXPECT_EQ(selection.selected_step(), 3u);
}

TEST(SelectionStateTest, ForgettingTheStepsFollowsTheNewestOfTheNextOnes) {
  SelectionState selection;
  selection.OnStepClosed(6);
  selection.Pin(5);
  selection.SelectDevices({2});
  selection.ForgetSteps();
  EXPECT_TRUE(selection.following());
  EXPECT_FALSE(selection.selected_step().has_value());
  selection.OnStepClosed(4);  // older than the 6 forgotten
  EXPECT_EQ(selection.selected_step(), 4u);
  EXPECT_TRUE(selection.IsSelected(2));
}

}  // namespace
}  // namespace trainscope::viewer

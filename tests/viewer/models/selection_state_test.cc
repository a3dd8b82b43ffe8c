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

}  // namespace
}  // namespace trainscope::viewer

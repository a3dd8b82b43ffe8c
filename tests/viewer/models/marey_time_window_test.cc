#include "trainscope/viewer/marey_time_window.h"

#include <gtest/gtest.h>

#include <map>

namespace trainscope::viewer {
namespace {

// Steps 1..n of 1 ms each, back to back from t = 0.
std::map<uint64_t, StepRecord> Steps(uint64_t n) {
  std::map<uint64_t, StepRecord> steps;
  for (uint64_t i = 1; i <= n; ++i) {
    StepRecord& s = steps[i];
    s.step = i;
    s.start_ns = static_cast<int64_t>(i - 1) * 1'000'000;
    s.end_ns = static_cast<int64_t>(i) * 1'000'000;
  }
  return steps;
}

TEST(MareyTimeWindowTest, FollowsTheNewestStepsAsTheyArrive) {
  MareyTimeWindow window;
  EXPECT_EQ(window.mode(), MareyTimeWindow::Mode::kFollow);
  window.Follow(4);
  auto steps = Steps(100);
  MareyTimeWindow::Range r = window.Resolve(steps, 0, 100'000'000, 100'000'000);
  // Steps 97..100: 96 ms .. 100 ms, a little padding either side.
  EXPECT_GE(r.start, 95'800'000);
  EXPECT_LE(r.start, 96'000'000);
  EXPECT_GE(r.end, 100'000'000);
  EXPECT_LE(r.end, 100'200'000);
  // Ten more steps: the window moves with them.
  steps = Steps(110);
  r = window.Resolve(steps, 0, 110'000'000, 110'000'000);
  EXPECT_GE(r.start, 105'800'000);
  EXPECT_GE(r.end, 110'000'000);
}

TEST(MareyTimeWindowTest, FollowingIncludesTheStepStillOpen) {
  MareyTimeWindow window;
  window.Follow(2);
  // Operators up to 103.5 ms, the newest closed step ends at 100 ms.
  const MareyTimeWindow::Range r = window.Resolve(Steps(100), 0, 103'500'000, 103'500'000);
  EXPECT_GE(r.end, 103'500'000);
  EXPECT_LE(r.start, 98'000'000);
}

TEST(MareyTimeWindowTest, AroundAStepCentresIt) {
  MareyTimeWindow window;
  window.ShowAround(50, 5);
  const MareyTimeWindow::Range r = window.Resolve(Steps(100), 0, 100'000'000, 100'000'000);
  // Steps 48..52: 47 ms .. 52 ms.
  EXPECT_NEAR(static_cast<double>(r.start), 47'000'000, 200'000);
  EXPECT_NEAR(static_cast<double>(r.end), 52'000'000, 200'000);
  // Near the first step the window is cut, not shifted past the data.
  window.ShowAround(1, 5);
  const MareyTimeWindow::Range first = window.Resolve(Steps(100), 0, 100'000'000, 100'000'000);
  EXPECT_LE(first.start, 0);
  EXPECT_LT(first.end, 3'200'000);
}

TEST(MareyTimeWindowTest, WheelChangesTheNumberOfStepsAndKeepsFollowing) {
  MareyTimeWindow window;
  window.Follow(8);
  EXPECT_TRUE(window.ZoomSteps(2.0));
  EXPECT_EQ(window.steps(), 4u);
  EXPECT_TRUE(window.ZoomSteps(1.1));  // a small turn still changes it
  EXPECT_EQ(window.steps(), 3u);
  EXPECT_TRUE(window.ZoomSteps(0.5));
  EXPECT_EQ(window.steps(), 6u);
  for (int i = 0; i < 20; ++i) window.ZoomSteps(4.0);
  EXPECT_EQ(window.steps(), 1u);
  EXPECT_EQ(window.mode(), MareyTimeWindow::Mode::kFollow);
  window.SetManual(10, 20);
  EXPECT_FALSE(window.ZoomSteps(2.0));  // by time instead, in the model
}

TEST(MareyTimeWindowTest, WholeRunAndManualIgnoreTheSteps) {
  MareyTimeWindow window;
  window.ShowWholeRun();
  MareyTimeWindow::Range r = window.Resolve(Steps(100), 0, 100'000'000, 100'000'000);
  EXPECT_LE(r.start, 0);
  EXPECT_GE(r.end, 100'000'000);
  window.SetManual(3'000, 1'000);  // swapped
  r = window.Resolve(Steps(100), 0, 100'000'000, 100'000'000);
  EXPECT_EQ(r.start, 1'000);
  EXPECT_EQ(r.end, 3'000);
}

TEST(MareyTimeWindowTest, WithoutStepsOrDataItShowsWhatThereIs) {
  MareyTimeWindow window;  // following, no steps closed yet
  MareyTimeWindow::Range r = window.Resolve({}, 5'000, 9'000, 9'000);
  EXPECT_LE(r.start, 5'000);
  EXPECT_GE(r.end, 9'000);
  r = window.Resolve({}, 1, 0, 0);  // no data
  EXPECT_LT(r.start, r.end);
}

TEST(MareyTimeWindowTest, OnRawClocksTheRangeMovesWithTheDataEnd) {
  MareyTimeWindow window;
  window.Follow(2);
  // The raw clocks run 7 ms ahead of the aligned one.
  const MareyTimeWindow::Range r = window.Resolve(Steps(10), 7'000'000, 17'000'000, 10'000'000);
  EXPECT_NEAR(static_cast<double>(r.start), 15'000'000, 100'000);
  EXPECT_NEAR(static_cast<double>(r.end), 17'000'000, 100'000);
}

}  // namespace
}  // namespace trainscope::viewer

#include "step_phase_tracker.h"

#include "gtest/gtest.h"

namespace trainscope::pytorch {
namespace {

// Ticks are ns with the monotonic clock: the spans read back as given.
TEST(StepPhaseTrackerTest, ForwardUntilTheFirstBackwardThenBackward) {
  TickClock clock(TickClock::Source::kMonotonic);
  StepPhaseTracker tracker;
  tracker.OnTopLevelOp(100, 110, false);
  tracker.OnTopLevelOp(120, 130, false);
  tracker.OnTopLevelOp(200, 220, true);
  tracker.OnTopLevelOp(140, 150, false);  // forward after backward: not forward any more
  tracker.OnTopLevelOp(230, 260, true);
  const StepPhaseTracker::Spans spans = tracker.TakeAndReset(clock);
  EXPECT_EQ(spans.forward_start, 100);
  EXPECT_EQ(spans.forward_end, 130);
  EXPECT_EQ(spans.backward_start, 200);
  EXPECT_EQ(spans.backward_end, 260);
  const StepPhaseTracker::Spans empty = tracker.TakeAndReset(clock);
  EXPECT_EQ(empty.forward_start, 0);
  EXPECT_EQ(empty.backward_end, 0);
}

// The extension updates the same words through the C helper, without a call.
TEST(StepPhaseTrackerTest, TheCUpdateIsTheSameRule) {
  TickClock clock(TickClock::Source::kMonotonic);
  StepPhaseTracker tracker;
  trainscope_phase_ticks_update(tracker.ticks(), 500, 510, 0);
  trainscope_phase_ticks_update(tracker.ticks(), 520, 530, 1);
  tracker.OnTopLevelOp(540, 550, true);
  const StepPhaseTracker::Spans spans = tracker.TakeAndReset(clock);
  EXPECT_EQ(spans.forward_start, 500);
  EXPECT_EQ(spans.forward_end, 510);
  EXPECT_EQ(spans.backward_start, 520);
  EXPECT_EQ(spans.backward_end, 550);
}

// With the TSC, ticks become CLOCK_MONOTONIC ns at the boundary.
TEST(StepPhaseTrackerTest, TicksAreMappedAtTheBoundary) {
  TickClock clock(TickClock::Source::kAuto);
  if (!clock.uses_tsc()) GTEST_SKIP() << "no invariant TSC here";
  StepPhaseTracker tracker;
  const uint64_t t0 = clock.Ticks();
  tracker.OnTopLevelOp(t0, t0 + 1000, false);
  const StepPhaseTracker::Spans spans = tracker.TakeAndReset(clock);
  EXPECT_EQ(spans.forward_start, clock.ToMonotonicNs(t0));
  EXPECT_EQ(spans.forward_end, clock.ToMonotonicNs(t0 + 1000));
  EXPECT_EQ(spans.backward_start, 0);
}

}  // namespace
}  // namespace trainscope::pytorch

// The live window's refresh bound (issue 23.5: the viewer took 33-81 % of a
// core while following a 4-rank job).
#include "trainscope/viewer/refresh_pacer.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(RefreshPacerTest, NothingPendingIsNeverDue) {
  RefreshPacer pacer;
  for (int64_t t = 0; t < 1000 * kMs; t += 10 * kMs) EXPECT_FALSE(pacer.Due(t, true, false));
  EXPECT_EQ(pacer.refreshes(), 0u);
}

TEST(RefreshPacerTest, AtMostEightRefreshesASecondVisibleAndOneHidden) {
  RefreshPacer visible;
  // A feed that always has something: a 33 ms frame timer for 10 s.
  for (int64_t t = 0; t < 10'000 * kMs; t += 33 * kMs) visible.Due(t, true, true);
  EXPECT_LE(visible.refreshes(), 10u * RefreshPacer::kVisibleHz + 1);
  EXPECT_GE(visible.refreshes(), 10u * RefreshPacer::kVisibleHz / 2);  // still follows

  RefreshPacer hidden;
  for (int64_t t = 0; t < 10'000 * kMs; t += 33 * kMs) hidden.Due(t, false, true);
  EXPECT_LE(hidden.refreshes(), 10u * RefreshPacer::kHiddenHz + 1);
  EXPECT_GE(hidden.refreshes(), 5u);
}

TEST(RefreshPacerTest, TheFirstUpdateAndAClockStepBackAreDueAtOnce) {
  RefreshPacer pacer;
  EXPECT_TRUE(pacer.Due(5'000 * kMs, true, true));
  EXPECT_FALSE(pacer.Due(5'010 * kMs, true, true));
  EXPECT_TRUE(pacer.Due(1'000 * kMs, true, true));  // the clock went back
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/stable_scale.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(StableScaleTest, RoundsUpToOneTwoTwoAndAHalfOrFive) {
  EXPECT_DOUBLE_EQ(StableScale::RoundUp(0.9), 1);
  EXPECT_DOUBLE_EQ(StableScale::RoundUp(1), 1);
  EXPECT_DOUBLE_EQ(StableScale::RoundUp(1.1), 2);
  EXPECT_DOUBLE_EQ(StableScale::RoundUp(2.2), 2.5);
  EXPECT_DOUBLE_EQ(StableScale::RoundUp(3e7), 5e7);
  EXPECT_DOUBLE_EQ(StableScale::RoundUp(6e7), 1e8);
}

TEST(StableScaleTest, GrowsAtOnceAndShrinksOnlyAfterAQuietSpell) {
  StableScale scale(/*patience=*/5);
  EXPECT_DOUBLE_EQ(scale.Fit(60e6), 1e8);
  // Steps between 60 and 90 ms: the axis does not move.
  for (double v : {70e6, 90e6, 65e6, 80e6}) EXPECT_DOUBLE_EQ(scale.Fit(v), 1e8);
  // One slow step: it grows at once, and stays there for the next normal ones.
  EXPECT_DOUBLE_EQ(scale.Fit(300e6), 5e8);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(scale.Fit(80e6), 5e8);
  // A fifth normal step in a row (below a third of the top): back down.
  EXPECT_DOUBLE_EQ(scale.Fit(80e6), 1e8);
  // A value between a third and the top resets the count.
  StableScale other(/*patience=*/3);
  other.Fit(300e6);
  other.Fit(50e6);
  other.Fit(50e6);
  other.Fit(200e6);
  EXPECT_DOUBLE_EQ(other.Fit(50e6), 5e8);
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/collector/analysis/world_size_wait.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(WorldSizeWaitTest, AnUnknownWorldSizeWaitsForNobody) {
  WorldSizeWait wait;
  EXPECT_FALSE(wait.Awaiting(0));
  EXPECT_FALSE(wait.Awaiting(3));
}

TEST(WorldSizeWaitTest, WaitsUntilEveryDeviceAppeared) {
  WorldSizeWait wait;
  wait.Expect(4);
  wait.Expect(2);  // the largest said wins
  EXPECT_TRUE(wait.Awaiting(3));
  EXPECT_FALSE(wait.Awaiting(4));
}

TEST(WorldSizeWaitTest, GivesUpWaitNsAfterTheFirstTickThatSawDevicesMissing) {
  WorldSizeWait wait;
  wait.Expect(4);
  wait.Tick(1'000, 4, 100);  // nobody missing: the clock does not start
  wait.Tick(2'000, 3, 100);  // starts here
  wait.Tick(2'099, 3, 100);
  EXPECT_TRUE(wait.Awaiting(3));
  wait.Tick(2'100, 3, 100);
  EXPECT_FALSE(wait.Awaiting(3));
  // Over for good: a larger world size later does not start it again.
  wait.Expect(8);
  wait.Tick(3'000, 3, 100);
  EXPECT_FALSE(wait.Awaiting(3));
}

}  // namespace
}  // namespace trainscope::collector

#include "trainscope/collector/analysis/device_liveness.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

constexpr int64_t kSilentAfter = 10;

TEST(DeviceLivenessTest, ANewDeviceBlocks) {
  DeviceLiveness d;
  EXPECT_TRUE(d.live());
  EXPECT_TRUE(d.CanBlock());
}

TEST(DeviceLivenessTest, SilentAfterNoEventsForSilentAfterNs) {
  DeviceLiveness d;
  d.Tick(100, kSilentAfter);  // the clock starts
  d.Tick(109, kSilentAfter);
  EXPECT_FALSE(d.silent());
  d.Tick(110, kSilentAfter);
  EXPECT_TRUE(d.silent());
  EXPECT_FALSE(d.CanBlock());
  // An event makes it heard again at the next Tick.
  d.OnEvent();
  d.Tick(111, kSilentAfter);
  EXPECT_FALSE(d.silent());
  EXPECT_TRUE(d.CanBlock());
}

TEST(DeviceLivenessTest, EventsBetweenTicksKeepItHeard) {
  DeviceLiveness d;
  for (int64_t t = 0; t < 100; t += 5) {
    d.OnEvent();
    d.Tick(t, kSilentAfter);
    EXPECT_FALSE(d.silent()) << t;
  }
}

TEST(DeviceLivenessTest, AClosedDeviceNeitherBlocksNorTurnsSilent) {
  DeviceLiveness d;
  d.Tick(0, kSilentAfter);
  d.OnClosed();
  EXPECT_FALSE(d.CanBlock());
  d.Tick(1'000, kSilentAfter);
  EXPECT_FALSE(d.silent());
}

TEST(DeviceLivenessTest, ReopeningRestartsTheSilenceClock) {
  DeviceLiveness d;
  d.Tick(0, kSilentAfter);
  d.Tick(50, kSilentAfter);
  ASSERT_TRUE(d.silent());
  d.OnOpened();
  EXPECT_TRUE(d.CanBlock());
  d.Tick(55, kSilentAfter);  // the clock restarts here, without an event
  d.Tick(64, kSilentAfter);
  EXPECT_FALSE(d.silent());
  d.Tick(65, kSilentAfter);
  EXPECT_TRUE(d.silent());
}

}  // namespace
}  // namespace trainscope::collector

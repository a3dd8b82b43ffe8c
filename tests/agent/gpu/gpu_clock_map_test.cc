#include "gpu/gpu_clock_map.h"

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

constexpr uint64_t kRealtime = 1'764'000'000'000'000'000ull;  // CUPTI's clock: wall time

TEST(GpuClockMapTest, NothingBeforeTheFirstCommit) {
  GpuClockMap clock;
  EXPECT_FALSE(clock.has_offset());
  EXPECT_FALSE(clock.Commit());
  EXPECT_EQ(clock.ToAgent(123), 123);
}

TEST(GpuClockMapTest, TheTightestBracketWins) {
  GpuClockMap clock;
  // Agent 1000..1100 around CUPTI reading R: the midpoint 1050.
  clock.AddSample(1000, kRealtime, 1100);
  // A preempted reading (wide bracket) saying something else is ignored.
  clock.AddSample(5000, kRealtime + 1000, 9000);
  // A tighter one: 2000..2010 around R + 1000 -> offset 2005 - (R + 1000).
  clock.AddSample(2000, kRealtime + 1000, 2010);
  ASSERT_TRUE(clock.Commit());
  EXPECT_TRUE(clock.has_offset());
  EXPECT_EQ(clock.offset_ns(), 2005 - static_cast<int64_t>(kRealtime + 1000));
  EXPECT_EQ(clock.uncertainty_ns(), 5);
  EXPECT_EQ(clock.ToAgent(kRealtime + 1000), 2005);
  EXPECT_EQ(clock.ToAgent(kRealtime + 2000), 3005);
}

TEST(GpuClockMapTest, EachCommitStartsAFreshWindowSoAWallClockStepIsFollowed) {
  GpuClockMap clock;
  clock.AddSample(1000, kRealtime, 1002);
  ASSERT_TRUE(clock.Commit());
  // The wall clock was stepped back by 1 s: a wider bracket than the last
  // window's best still replaces it, because the window is new.
  clock.AddSample(3000, kRealtime + 2000 - 1'000'000'000, 3010);
  ASSERT_TRUE(clock.Commit());
  EXPECT_EQ(clock.ToAgent(kRealtime + 2000 - 1'000'000'000), 3005);
  // A bracket running backwards is not a reading.
  clock.AddSample(10, kRealtime, 5);
  EXPECT_FALSE(clock.Commit());
}

}  // namespace
}  // namespace trainscope::agent

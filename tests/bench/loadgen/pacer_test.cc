#include "pacer.h"

#include "gtest/gtest.h"

namespace trainscope::loadgen {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

TEST(PacerTest, OnScheduleWaitsOneInterval) {
  Pacer pacer(/*rate=*/1000, kStart);
  // A call made at once: the next is due 1 ms after the start.
  EXPECT_EQ(pacer.Wait(kStart), absl::Milliseconds(1));
  // Made 1 ms later (on time): the next 1 ms after that.
  EXPECT_EQ(pacer.Wait(kStart + absl::Milliseconds(1)), absl::Milliseconds(1));
  EXPECT_EQ(pacer.slips(), 0u);
}

TEST(PacerTest, SmallLagIsMadeUp) {
  Pacer pacer(/*rate=*/1000, kStart, /*max_lag=*/absl::Milliseconds(20));
  // 10 ms late on the first call: the next nine are due at once, the tenth 1 ms on.
  const absl::Time late = kStart + absl::Milliseconds(10);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(pacer.Wait(late), absl::ZeroDuration()) << i;
  EXPECT_EQ(pacer.Wait(late), absl::ZeroDuration());
  EXPECT_EQ(pacer.Wait(late), absl::Milliseconds(1));
  EXPECT_EQ(pacer.slips(), 0u);
}

TEST(PacerTest, StarvedProducerDoesNotBurst) {
  Pacer pacer(/*rate=*/20000, kStart, /*max_lag=*/absl::Milliseconds(20));
  // The thread got no CPU for a second: catching up would be 20,000 calls at
  // once; the pacer allows the 20 ms of lag (400 calls), then paces again.
  const absl::Time after_stall = kStart + absl::Seconds(1);
  int burst = 0;
  while (pacer.Wait(after_stall) == absl::ZeroDuration()) {
    ++burst;
    ASSERT_LT(burst, 1000) << "the pacer makes the whole second up in a burst";
  }
  EXPECT_GE(burst, 390);
  EXPECT_LE(burst, 410);
  EXPECT_EQ(pacer.slips(), 1u);
}

TEST(PacerTest, ZeroRateNeverWaits) {
  Pacer pacer(/*rate=*/0, kStart);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(pacer.Wait(kStart), absl::ZeroDuration());
  EXPECT_EQ(pacer.slips(), 0u);
}

}  // namespace
}  // namespace trainscope::loadgen

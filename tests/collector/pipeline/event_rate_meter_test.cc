#include "trainscope/collector/pipeline/event_rate_meter.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

TEST(EventRateMeterTest, NoRateFromOneSample) {
  EventRateMeter rate;
  EXPECT_EQ(rate.events_per_second(), 0);
  rate.Sample(kStart, 1000);
  EXPECT_EQ(rate.events_per_second(), 0);
}

TEST(EventRateMeterTest, RateOverTheSamplesOfTheWindow) {
  EventRateMeter rate;
  rate.Sample(kStart, 0);
  rate.Sample(kStart + absl::Seconds(1), 1000);
  EXPECT_DOUBLE_EQ(rate.events_per_second(), 1000);
  rate.Sample(kStart + absl::Seconds(2), 4000);
  EXPECT_DOUBLE_EQ(rate.events_per_second(), 2000);  // 4000 over 2 s
}

TEST(EventRateMeterTest, ForgetsSamplesOlderThanTheWindow) {
  EventRateMeter rate;
  rate.Sample(kStart, 0);
  rate.Sample(kStart + absl::Seconds(1), 100'000);  // a burst, long ago
  rate.Sample(kStart + absl::Seconds(10), 100'000);
  // Only the burst's end is within the window: the job is idle now.
  EXPECT_DOUBLE_EQ(rate.events_per_second(), 0);
  rate.Sample(kStart + absl::Seconds(12), 100'500);
  EXPECT_DOUBLE_EQ(rate.events_per_second(), 250);
}

TEST(EventRateMeterTest, FallsToZeroWithinTheWindowOnceEventsStop) {
  EventRateMeter rate;
  uint64_t total = 0;
  absl::Time now = kStart;
  for (int s = 0; s <= 10; ++s, now += absl::Seconds(1), total += 90'000) rate.Sample(now, total);
  EXPECT_DOUBLE_EQ(rate.events_per_second(), 90'000);
  EXPECT_FALSE(rate.settled());
  // The job stalls: the total stays, samples go on once a second. The rate
  // falls (never rises) and reads 0 once the window holds no event.
  const uint64_t stalled = total - 90'000;
  const absl::Time last_event = now - absl::Seconds(1);
  double previous = rate.events_per_second();
  for (; now <= last_event + EventRateMeter::kWindow + absl::Seconds(1); now += absl::Seconds(1)) {
    rate.Sample(now, stalled);
    EXPECT_LE(rate.events_per_second(), previous);
    previous = rate.events_per_second();
  }
  EXPECT_EQ(rate.events_per_second(), 0);
  EXPECT_TRUE(rate.settled());
  rate.Sample(now + absl::Minutes(11), stalled);
  EXPECT_EQ(rate.events_per_second(), 0);
}

TEST(EventRateMeterTest, SettledOnlyAtZero) {
  EventRateMeter rate;
  EXPECT_TRUE(rate.settled());  // nothing sampled: nothing to bring down
  rate.Sample(kStart, 0);
  rate.Sample(kStart + absl::Seconds(1), 10);
  EXPECT_FALSE(rate.settled());
}

}  // namespace
}  // namespace trainscope::collector

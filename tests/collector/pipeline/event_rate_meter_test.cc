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

}  // namespace
}  // namespace trainscope::collector

#include "trainscope/collector/pipeline/feed_flush_schedule.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

FeedFlushSchedule MakeSchedule(absl::Duration probe = absl::Seconds(1)) {
  return FeedFlushSchedule({.rank_interval = absl::Milliseconds(100),
                            .summary_interval = absl::Seconds(1),
                            .probe_interval = probe});
}

TEST(FeedFlushScheduleTest, NothingPendingIsNeverDue) {
  FeedFlushSchedule schedule = MakeSchedule(absl::ZeroDuration());
  EXPECT_EQ(schedule.Next(false, false), absl::InfiniteFuture());
  const FeedFlushSchedule::Due due = schedule.Take(kStart, /*force=*/false, false);
  EXPECT_FALSE(due.ranks);
  EXPECT_FALSE(due.summary);
  EXPECT_FALSE(schedule.Take(kStart, /*force=*/true, false).ranks);
}

TEST(FeedFlushScheduleTest, CoalescesRankUpdatesToOncePerRankInterval) {
  FeedFlushSchedule schedule = MakeSchedule();
  EXPECT_TRUE(schedule.Take(kStart, false, /*ranks_changed=*/true).ranks);
  // Within the interval, changed ranks wait; the wait ends at the interval.
  EXPECT_FALSE(schedule.Take(kStart + absl::Milliseconds(50), false, true).ranks);
  EXPECT_EQ(schedule.Next(/*ranks_changed=*/true, false), kStart + absl::Milliseconds(100));
  EXPECT_TRUE(schedule.Take(kStart + absl::Milliseconds(100), false, true).ranks);
  // Forced (the pipeline stops): everything pending goes out at once.
  EXPECT_TRUE(schedule.Take(kStart + absl::Milliseconds(101), /*force=*/true, true).ranks);
}

TEST(FeedFlushScheduleTest, AStateChangeGoesOutAtTheNextRankFlush) {
  FeedFlushSchedule schedule = MakeSchedule();
  schedule.MarkSummaryChanged();
  EXPECT_TRUE(schedule.summary_changed());
  FeedFlushSchedule::Due due = schedule.Take(kStart, false, false);
  EXPECT_TRUE(due.ranks);
  EXPECT_TRUE(due.summary);
  EXPECT_FALSE(schedule.summary_changed());
  // A second change soon after waits for the rank interval only, not the
  // summary interval.
  schedule.MarkSummaryChanged();
  EXPECT_FALSE(schedule.Take(kStart + absl::Milliseconds(10), false, false).summary);
  EXPECT_EQ(schedule.Next(false, false), kStart + absl::Milliseconds(100));
  EXPECT_TRUE(schedule.Take(kStart + absl::Milliseconds(100), false, false).summary);
}

TEST(FeedFlushScheduleTest, CountersAloneGoOutOncePerSummaryInterval) {
  FeedFlushSchedule schedule = MakeSchedule();
  schedule.MarkCountersChanged();
  EXPECT_TRUE(schedule.Take(kStart, false, false).summary);
  schedule.MarkCountersChanged();
  // Ranks flush meanwhile; the summary waits for its own interval.
  FeedFlushSchedule::Due due = schedule.Take(kStart + absl::Milliseconds(500), false, true);
  EXPECT_TRUE(due.ranks);
  EXPECT_FALSE(due.summary);
  EXPECT_EQ(schedule.Next(false, false), kStart + absl::Seconds(1));
  EXPECT_TRUE(schedule.Take(kStart + absl::Seconds(1), false, false).summary);
  // Nothing moved since: nothing to say.
  EXPECT_FALSE(schedule.Take(kStart + absl::Seconds(3), false, false).summary);
}

TEST(FeedFlushScheduleTest, AFallingRateKeepsTheSummaryDueOncePerIntervalUntilSettled) {
  FeedFlushSchedule schedule = MakeSchedule(absl::ZeroDuration());
  schedule.MarkCountersChanged();
  EXPECT_TRUE(schedule.Take(kStart, false, false).summary);
  // The events stopped but the rate is not 0 yet: no counter moves, still
  // the summary (with the lower rate) goes out each summary interval and the
  // pipeline thread is woken for it.
  schedule.SetRateMoving(true);
  EXPECT_FALSE(schedule.Take(kStart + absl::Milliseconds(500), false, false).summary);
  EXPECT_EQ(schedule.Next(false, false), kStart + absl::Seconds(1));
  EXPECT_TRUE(schedule.Take(kStart + absl::Seconds(1), false, false).summary);
  EXPECT_EQ(schedule.Next(false, false), kStart + absl::Seconds(2));
  EXPECT_TRUE(schedule.Take(kStart + absl::Seconds(2), false, false).summary);
  // The rate reached 0 and that summary went out: nothing more, ever.
  schedule.SetRateMoving(false);
  EXPECT_EQ(schedule.Next(false, false), absl::InfiniteFuture());
  EXPECT_FALSE(schedule.Take(kStart + absl::Minutes(11), false, false).summary);
}

TEST(FeedFlushScheduleTest, ProbesOncePerIntervalWhileThereAreStreams) {
  FeedFlushSchedule schedule = MakeSchedule(absl::Seconds(1));
  EXPECT_EQ(schedule.Next(false, /*has_streams=*/false), absl::InfiniteFuture());
  EXPECT_TRUE(schedule.ProbeDue(kStart, false));
  EXPECT_FALSE(schedule.ProbeDue(kStart + absl::Milliseconds(999), false));
  EXPECT_EQ(schedule.Next(false, /*has_streams=*/true), kStart + absl::Seconds(1));
  // Never while stopping.
  EXPECT_FALSE(schedule.ProbeDue(kStart + absl::Seconds(2), /*force=*/true));
  EXPECT_TRUE(schedule.ProbeDue(kStart + absl::Seconds(2), false));
}

TEST(FeedFlushScheduleTest, AZeroProbeIntervalNeverProbes) {
  FeedFlushSchedule schedule = MakeSchedule(absl::ZeroDuration());
  EXPECT_FALSE(schedule.ProbeDue(kStart, false));
  EXPECT_EQ(schedule.Next(false, /*has_streams=*/true), absl::InfiniteFuture());
}

}  // namespace
}  // namespace trainscope::collector

#include "trainscope/viewer/feed_coalescer.h"

#include <gtest/gtest.h>

#include <thread>

namespace trainscope::viewer {
namespace {

FeedCoalescer::Delta JobState(uint64_t events) {
  FeedCoalescer::Delta delta;
  JobRecord job;
  job.job_id = "job-1";
  job.events_received = events;
  delta.job = job;
  return delta;
}

FeedCoalescer::Delta Operators(uint64_t step, size_t count) {
  FeedCoalescer::Delta delta;
  OperatorBatchRecord batch;
  batch.operators.resize(count);
  for (auto& op : batch.operators) op.step = step;
  delta.operator_batches.push_back(batch);
  return delta;
}

TEST(FeedCoalescerTest, NothingPendingGivesNothing) {
  FeedCoalescer coalescer;
  EXPECT_FALSE(coalescer.Take().has_value());
}

TEST(FeedCoalescerTest, SkipsToNewestJobStateAndCountsSkipped) {
  FeedCoalescer coalescer;
  for (uint64_t i = 1; i <= 10; ++i) coalescer.Post(JobState(i));
  std::optional<FeedCoalescer::Delta> delta = coalescer.Take();
  ASSERT_TRUE(delta.has_value());
  ASSERT_TRUE(delta->job.has_value());
  EXPECT_EQ(delta->job->events_received, 10u);
  EXPECT_EQ(coalescer.stats().states_skipped, 9u);
  EXPECT_EQ(coalescer.stats().updates_coalesced, 9u);
  EXPECT_FALSE(coalescer.Take().has_value());
}

TEST(FeedCoalescerTest, KeepsAllStepsInOrder) {
  FeedCoalescer coalescer;
  for (uint64_t i = 1; i <= 5; ++i) {
    FeedCoalescer::Delta delta;
    delta.steps.push_back({i, 0, 0, {}});
    coalescer.Post(std::move(delta));
  }
  auto delta = coalescer.Take();
  ASSERT_TRUE(delta.has_value());
  ASSERT_EQ(delta->steps.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(delta->steps[i].step, i + 1);
  EXPECT_EQ(coalescer.stats().states_skipped, 0u);
}

TEST(FeedCoalescerTest, DropsOldestOperatorBatchesPastTheCap) {
  FeedCoalescer coalescer(/*max_pending_operators=*/250);
  for (uint64_t step = 1; step <= 5; ++step) coalescer.Post(Operators(step, 100));
  auto delta = coalescer.Take();
  ASSERT_TRUE(delta.has_value());
  ASSERT_EQ(delta->operator_batches.size(), 2u);
  EXPECT_EQ(delta->operator_batches.front().operators.front().step, 4u);
  EXPECT_EQ(delta->operator_batches.back().operators.front().step, 5u);
  EXPECT_EQ(coalescer.stats().batches_dropped, 3u);
  EXPECT_EQ(coalescer.stats().operators_dropped, 300u);
}

TEST(FeedCoalescerTest, ResetDiscardsWhatWasPending) {
  FeedCoalescer coalescer;
  coalescer.Post(Operators(1, 10));
  FeedCoalescer::Delta reset = JobState(7);
  reset.reset = true;
  coalescer.Post(std::move(reset));
  auto delta = coalescer.Take();
  ASSERT_TRUE(delta.has_value());
  EXPECT_TRUE(delta->reset);
  EXPECT_TRUE(delta->operator_batches.empty());
}

TEST(FeedCoalescerTest, ProducerAndConsumerThreadsLoseNoSteps) {
  FeedCoalescer coalescer;
  constexpr uint64_t kSteps = 2000;
  std::thread producer([&] {
    for (uint64_t i = 1; i <= kSteps; ++i) {
      FeedCoalescer::Delta delta;
      delta.steps.push_back({i, 0, 0, {}});
      coalescer.Post(std::move(delta));
    }
  });
  uint64_t seen = 0, last = 0;
  while (seen < kSteps) {
    if (auto delta = coalescer.Take()) {
      for (const auto& step : delta->steps) {
        EXPECT_EQ(step.step, last + 1);
        last = step.step;
        ++seen;
      }
    }
  }
  producer.join();
  EXPECT_EQ(seen, kSteps);
}

}  // namespace
}  // namespace trainscope::viewer

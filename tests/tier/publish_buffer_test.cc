#include "trainscope/tier/publish_buffer.h"

#include <thread>

#include "gtest/gtest.h"

namespace trainscope::tier {
namespace {

PublishBuffer::Item ItemOf(uint64_t index, size_t bytes) {
  PublishBuffer::Item item;
  item.job_id = "j";
  item.index = index;
  item.payload.assign(bytes, 'x');
  return item;
}

TEST(PublishBufferTest, RefusesPastItsBoundAndCountsIt) {
  PublishBuffer buffer(100);
  EXPECT_TRUE(buffer.Push(ItemOf(0, 60)));
  EXPECT_TRUE(buffer.Push(ItemOf(1, 40)));
  EXPECT_FALSE(buffer.Push(ItemOf(2, 1)));  // 101 > 100
  PublishBuffer::Counters c = buffer.counters();
  EXPECT_EQ(c.queued, 2u);
  EXPECT_EQ(c.queued_bytes, 100u);
  EXPECT_EQ(c.pushed, 2u);
  EXPECT_EQ(c.refused, 1u);
}

TEST(PublishBufferTest, AnItemLargerThanTheBoundGoesWhenTheBufferIsEmpty) {
  PublishBuffer buffer(10);
  EXPECT_TRUE(buffer.Push(ItemOf(0, 50)));
  EXPECT_FALSE(buffer.Push(ItemOf(1, 1)));
  EXPECT_EQ(buffer.Take(10, absl::ZeroDuration()).size(), 1u);
  EXPECT_TRUE(buffer.Push(ItemOf(1, 1)));
}

TEST(PublishBufferTest, TakesWindowsOldestFirstAndFreesTheirBytes) {
  PublishBuffer buffer(1000);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(buffer.Push(ItemOf(i, 10)));
  std::vector<PublishBuffer::Item> first = buffer.Take(3, absl::ZeroDuration());
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].index, 0u);
  EXPECT_EQ(first[2].index, 2u);
  EXPECT_EQ(buffer.counters().queued_bytes, 20u);
  std::vector<PublishBuffer::Item> rest = buffer.Take(3, absl::ZeroDuration());
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[1].index, 4u);
  EXPECT_EQ(buffer.counters().queued, 0u);
}

TEST(PublishBufferTest, TakeWaitsForAPushOrAWake) {
  PublishBuffer buffer(1000);
  std::thread pusher([&] {
    absl::SleepFor(absl::Milliseconds(20));
    buffer.Push(ItemOf(7, 1));
  });
  // Generous wait: returns as soon as the push lands.
  std::vector<PublishBuffer::Item> got = buffer.Take(10, absl::Seconds(30));
  pusher.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].index, 7u);
  std::thread waker([&] {
    absl::SleepFor(absl::Milliseconds(20));
    buffer.Wake();
  });
  EXPECT_TRUE(buffer.Take(10, absl::Seconds(30)).empty());
  waker.join();
}

}  // namespace
}  // namespace trainscope::tier

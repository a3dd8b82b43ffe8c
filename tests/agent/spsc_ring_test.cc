#include "spsc_ring.h"

#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

struct Item {
  uint64_t value;
  uint64_t check;  // ~value: catches torn or stale slots
};

std::vector<uint64_t> ConsumeAll(SpscRing<Item>& ring, size_t max = SIZE_MAX) {
  std::vector<uint64_t> out;
  ring.Consume(max, [&](const Item& item) { out.push_back(item.value); });
  return out;
}

TEST(SpscRingTest, RoundsCapacityUpToPowerOfTwo) {
  EXPECT_EQ(SpscRing<Item>(1000).capacity(), 1024u);
  EXPECT_EQ(SpscRing<Item>(64).capacity(), 64u);
  EXPECT_EQ(SpscRing<Item>(0).capacity(), 0u);
}

TEST(SpscRingTest, EmptyRingConsumesNothing) {
  SpscRing<Item> ring(8);
  EXPECT_TRUE(ConsumeAll(ring).empty());
  EXPECT_EQ(ring.size(), 0u);
}

TEST(SpscRingTest, FullRingRefusesUntilConsumed) {
  SpscRing<Item> ring(4);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(ring.TryPush({i, ~i}));
  EXPECT_FALSE(ring.TryPush({99, ~99ull}));
  EXPECT_EQ(ring.size(), 4u);
  EXPECT_EQ(ConsumeAll(ring, 1), std::vector<uint64_t>{0});
  EXPECT_TRUE(ring.TryPush({4, ~4ull}));
  EXPECT_FALSE(ring.TryPush({5, ~5ull}));
  EXPECT_EQ(ConsumeAll(ring), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(ring.pushed(), 5u);
  EXPECT_EQ(ring.consumed(), 5u);
}

TEST(SpscRingTest, WrapsAroundKeepingOrder) {
  SpscRing<Item> ring(8);
  uint64_t next_push = 0, next_pop = 0;
  for (int round = 0; round < 100; ++round) {
    for (int k = 0; k < 5; ++k, ++next_push) ASSERT_TRUE(ring.TryPush({next_push, ~next_push}));
    for (uint64_t v : ConsumeAll(ring, 3 + round % 3)) EXPECT_EQ(v, next_pop++);
    for (uint64_t v : ConsumeAll(ring)) EXPECT_EQ(v, next_pop++);
  }
  EXPECT_EQ(next_pop, next_push);
}

TEST(SpscRingTest, ZeroCapacityRefusesEverything) {
  SpscRing<Item> ring(0);
  EXPECT_FALSE(ring.TryPush({1, ~1ull}));
  EXPECT_TRUE(ConsumeAll(ring).empty());
}

// One producer, one consumer, a small ring so both sides wrap often: every
// item arrives once, intact and in order; refused pushes are retried.
TEST(SpscRingTest, ConcurrentProducerConsumerKeepsOrderAndCount) {
  constexpr uint64_t kItems = 2'000'000;
  SpscRing<Item> ring(256);
  std::thread producer([&] {
    for (uint64_t i = 0; i < kItems;) {
      if (ring.TryPush({i, ~i})) {
        ++i;
      } else {
        std::this_thread::yield();
      }
    }
  });
  uint64_t expected = 0;
  bool intact = true, ordered = true;
  while (expected < kItems) {
    const size_t n = ring.Consume(64, [&](const Item& item) {
      intact &= item.check == ~item.value;
      ordered &= item.value == expected;
      ++expected;
    });
    if (n == 0) std::this_thread::yield();
  }
  producer.join();
  EXPECT_TRUE(intact);
  EXPECT_TRUE(ordered);
  EXPECT_EQ(ring.pushed(), kItems);
  EXPECT_EQ(ring.size(), 0u);
}

}  // namespace
}  // namespace trainscope::agent

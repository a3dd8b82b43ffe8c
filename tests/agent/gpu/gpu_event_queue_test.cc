#include "gpu/gpu_event_queue.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

GpuEventRecord Event(uint64_t value) {
  GpuEventRecord e;
  e.event.kind = EventKind::kGpuKernel;
  e.event.value = value;
  return e;
}

TEST(GpuEventQueueTest, BoundedAndDropsCounted) {
  GpuEventQueue queue(4);
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(queue.Push(Event(i)), i < 4);
  EXPECT_EQ(queue.pushed(), 4u);
  EXPECT_EQ(queue.dropped(), 2u);
  EXPECT_EQ(queue.waiting(), 4u);
  std::vector<uint64_t> values;
  EXPECT_EQ(queue.Consume(3, [&](const GpuEventRecord& e) { values.push_back(e.event.value); }),
            3u);
  EXPECT_EQ(values, (std::vector<uint64_t>{0, 1, 2}));  // the oldest first; the newest dropped
  EXPECT_TRUE(queue.Push(Event(9)));
  RingRegistry::Totals totals;
  queue.AddTo(&totals);
  EXPECT_EQ(totals.recorded, 5u);
  EXPECT_EQ(totals.dropped_full, 2u);
  EXPECT_EQ(totals.waiting, 2u);
}

TEST(GpuEventQueueTest, SeveralProducersLoseNothingUncounted) {
  GpuEventQueue queue(1024);
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) queue.Push(Event(i));
    });
  }
  uint64_t consumed = 0;
  std::thread consumer([&] {
    while (consumed + queue.dropped() < 4000) {
      consumed += queue.Consume(100, [](const GpuEventRecord&) {});
    }
  });
  for (auto& p : producers) p.join();
  consumer.join();
  EXPECT_EQ(consumed + queue.dropped(), 4000u);
  EXPECT_EQ(queue.pushed(), consumed);
}

}  // namespace
}  // namespace trainscope::agent

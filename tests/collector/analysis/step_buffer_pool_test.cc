#include "trainscope/collector/analysis/step_buffer_pool.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(StepBufferPoolTest, ANewBufferHasRoomForTheEventsAsked) {
  StepBufferPool pool;
  std::unique_ptr<DeviceStepBuffer> b = pool.TakeBuffer(100);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->events.empty());
  EXPECT_GE(b->events.capacity(), 100u);
}

TEST(StepBufferPoolTest, AGivenBufferComesBackEmptyWithItsStorage) {
  StepBufferPool pool;
  std::unique_ptr<DeviceStepBuffer> b = pool.TakeBuffer(0);
  b->events.resize(1000);
  b->ended = true;
  b->end_raw_ns = 42;
  b->flops = 7;
  b->NoteGpuStream(3);
  DeviceStepBuffer* const raw = b.get();
  pool.GiveBuffer(std::move(b));
  EXPECT_EQ(pool.buffers(), 1u);

  std::unique_ptr<DeviceStepBuffer> again = pool.TakeBuffer(10);
  EXPECT_EQ(again.get(), raw);
  EXPECT_TRUE(again->events.empty());
  EXPECT_GE(again->events.capacity(), 1000u);  // no new allocation for the next step
  EXPECT_FALSE(again->ended);
  EXPECT_EQ(again->end_raw_ns, 0);
  EXPECT_EQ(again->flops, 0u);
  EXPECT_TRUE(again->gpu_streams.empty());
  EXPECT_EQ(pool.buffers(), 0u);
}

TEST(StepBufferPoolTest, KeepsAtMostKMaxBuffers) {
  StepBufferPool pool;
  for (size_t i = 0; i < StepBufferPool::kMaxBuffers + 10; ++i) {
    pool.GiveBuffer(std::make_unique<DeviceStepBuffer>());
  }
  pool.GiveBuffer(nullptr);
  EXPECT_EQ(pool.buffers(), StepBufferPool::kMaxBuffers);
}

TEST(StepBufferPoolTest, KeepsTheLargestOperatorStorage) {
  StepBufferPool pool;
  EXPECT_EQ(pool.TakeOperators().capacity(), 0u);
  std::vector<OperatorRecord> large(500);
  std::vector<OperatorRecord> small(10);
  pool.GiveOperators(std::move(large));
  pool.GiveOperators(std::move(small));  // smaller: not kept
  std::vector<OperatorRecord> taken = pool.TakeOperators();
  EXPECT_TRUE(taken.empty());
  EXPECT_GE(taken.capacity(), 500u);
  // Taken: the pool has none until given again.
  EXPECT_EQ(pool.TakeOperators().capacity(), 0u);
}

}  // namespace
}  // namespace trainscope::collector

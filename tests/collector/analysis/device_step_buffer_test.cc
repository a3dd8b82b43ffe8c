#include "trainscope/collector/analysis/device_step_buffer.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(DeviceStepBufferTest, ResetEmptiesItButKeepsTheEventsStorage) {
  DeviceStepBuffer b;
  b.events.resize(100);
  b.has_start = true;
  b.ended = true;
  b.start_raw_ns = 5;
  b.phase_ns[1] = 7;
  b.phase_seen[1] = true;
  b.flops = 9;
  b.peak_memory = 11;
  const size_t capacity = b.events.capacity();
  b.Reset();
  EXPECT_TRUE(b.events.empty());
  EXPECT_EQ(b.events.capacity(), capacity);
  EXPECT_FALSE(b.has_start);
  EXPECT_FALSE(b.ended);
  EXPECT_EQ(b.start_raw_ns, 0);
  EXPECT_EQ(b.phase_ns[1], 0);
  EXPECT_FALSE(b.phase_seen[1]);
  EXPECT_EQ(b.flops, 0u);
  EXPECT_EQ(b.peak_memory, 0u);
}

}  // namespace
}  // namespace trainscope::collector

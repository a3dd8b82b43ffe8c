#include "gpu/device_event_reorder.h"

#include <vector>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

GpuEventRecord Kernel(int64_t end_ns, uint32_t stream = 7) {
  GpuEventRecord e;
  e.event.kind = EventKind::kGpuKernel;
  e.event.start_ns = end_ns - 10;
  e.event.end_ns = end_ns;
  e.stream = stream;
  return e;
}

std::vector<int64_t> Ends(const std::vector<GpuEventRecord>& events) {
  std::vector<int64_t> ends;
  for (const GpuEventRecord& e : events) ends.push_back(e.event.end_ns);
  return ends;
}

TEST(DeviceEventReorderTest, ALateBufferWithinTheHoldIsSentInEndOrder) {
  DeviceEventReorder reorder(/*hold_ns=*/1000, /*max_held=*/100);
  std::vector<GpuEventRecord> sent;
  const auto sink = [&](const GpuEventRecord& e) { sent.push_back(e); };
  // A newer buffer (ends 600..800) comes back before an older one (100..300),
  // as CUPTI does with unforced flushes.
  for (int64_t end : {600, 700, 800}) reorder.Add(Kernel(end));
  reorder.Release(sink);
  EXPECT_TRUE(sent.empty()) << "nothing is 1000 ns older than the newest yet";
  for (int64_t end : {100, 200, 300}) reorder.Add(Kernel(end));
  reorder.Add(Kernel(1500));
  reorder.Release(sink);
  EXPECT_EQ(Ends(sent), (std::vector<int64_t>{100, 200, 300})) << "ends <= 1500 - 1000";
  reorder.ReleaseAll(sink);
  EXPECT_EQ(Ends(sent), (std::vector<int64_t>{100, 200, 300, 600, 700, 800, 1500}));
  EXPECT_EQ(reorder.held(), 0u);
}

TEST(DeviceEventReorderTest, HoldsNoMoreThanItsBoundEarliestFirst) {
  DeviceEventReorder reorder(/*hold_ns=*/1'000'000, /*max_held=*/3);
  std::vector<GpuEventRecord> sent;
  const auto sink = [&](const GpuEventRecord& e) { sent.push_back(e); };
  for (int64_t end : {50, 10, 40, 20, 30}) reorder.Add(Kernel(end));
  reorder.Release(sink);
  EXPECT_EQ(Ends(sent), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(reorder.held(), 3u);
}

TEST(DeviceEventReorderTest, TheTailBeforeAQuietDeviceGoesOnTime) {
  DeviceEventReorder reorder(/*hold_ns=*/1000, /*max_held=*/100);
  std::vector<GpuEventRecord> sent;
  const auto sink = [&](const GpuEventRecord& e) { sent.push_back(e); };
  for (int64_t end : {300, 100, 200}) reorder.Add(Kernel(end));
  reorder.Release(sink);
  EXPECT_TRUE(sent.empty());
  reorder.ReleaseEndedBefore(250, sink);
  EXPECT_EQ(Ends(sent), (std::vector<int64_t>{100, 200}));
  EXPECT_EQ(reorder.held(), 1u);
}

}  // namespace
}  // namespace trainscope::agent

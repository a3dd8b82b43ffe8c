#include "trainscope/collector/analysis/gpu_work_progress.h"

#include <limits>

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

constexpr uint64_t kStreamA = uint64_t{0} << 32 | 7;
constexpr uint64_t kStreamB = uint64_t{1} << 32 | 7;

DeviceStepBuffer Ended(int64_t end_ns, std::initializer_list<uint64_t> streams = {}) {
  DeviceStepBuffer b;
  b.ended = true;
  b.end_raw_ns = end_ns;
  for (uint64_t s : streams) b.NoteGpuStream(s);
  return b;
}

TEST(GpuWorkProgressTest, ADeviceWithoutGpusAwaitsNothing) {
  GpuWorkProgress gpu;
  const DeviceStepBuffer b = Ended(100);
  EXPECT_FALSE(gpu.gpu());
  EXPECT_FALSE(gpu.Awaits(0, &b, nullptr));
}

TEST(GpuWorkProgressTest, NoteReturnsTheLaunchesBefore) {
  GpuWorkProgress gpu;
  GpuWorkProgress::Before first = gpu.Note(kStreamA, 50);
  EXPECT_TRUE(gpu.gpu());
  EXPECT_EQ(first.stream_launch_ns, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(first.max_launch_ns, std::numeric_limits<int64_t>::min());
  GpuWorkProgress::Before second = gpu.Note(kStreamB, 40);
  EXPECT_EQ(second.stream_launch_ns, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(second.max_launch_ns, 50);
  GpuWorkProgress::Before third = gpu.Note(kStreamA, 30);  // out of order: the max stays
  EXPECT_EQ(third.stream_launch_ns, 50);
  EXPECT_EQ(gpu.max_launch_ns(), 50);
}

TEST(GpuWorkProgressTest, AStepWaitsForEachOfItsStreamsToPassItsEnd) {
  GpuWorkProgress gpu;
  gpu.Note(kStreamA, 90);
  gpu.Note(kStreamB, 95);
  const DeviceStepBuffer b = Ended(100, {kStreamA, kStreamB});
  EXPECT_TRUE(gpu.Awaits(3, &b, nullptr));
  gpu.Note(kStreamA, 120);  // A is done with the step, B may still run its work
  EXPECT_TRUE(gpu.Awaits(3, &b, nullptr));
  gpu.Note(kStreamB, 101);
  EXPECT_FALSE(gpu.Awaits(3, &b, nullptr));
}

TEST(GpuWorkProgressTest, AStepWithoutGpuWorkWaitsForAnyLaunchAfterItsEnd) {
  GpuWorkProgress gpu;
  gpu.Expect();
  const DeviceStepBuffer b = Ended(100);
  EXPECT_TRUE(gpu.Awaits(0, &b, nullptr));
  gpu.Note(kStreamA, 100);
  EXPECT_FALSE(gpu.Awaits(0, &b, nullptr));
}

TEST(GpuWorkProgressTest, WorkLaunchedAfterTheNextStepsEndReleasesTheStep) {
  GpuWorkProgress gpu;
  gpu.Note(kStreamA, 50);
  const DeviceStepBuffer b = Ended(100, {kStreamA});
  const DeviceStepBuffer next = Ended(200);
  EXPECT_TRUE(gpu.Awaits(0, &b, &next));
  gpu.Note(kStreamB, 200);  // another stream, past the next step's end
  EXPECT_FALSE(gpu.Awaits(0, &b, &next));
}

TEST(GpuWorkProgressTest, AStepTheDeviceNeverEndedAwaitsNothing) {
  GpuWorkProgress gpu;
  gpu.Expect();
  DeviceStepBuffer open;
  EXPECT_FALSE(gpu.Awaits(0, &open, nullptr));
  EXPECT_FALSE(gpu.Awaits(0, nullptr, nullptr));
}

TEST(GpuWorkProgressTest, TheWaitEndsAfterWaitNsAndReleasesTheStep) {
  GpuWorkProgress gpu;
  gpu.Note(kStreamA, 50);
  const DeviceStepBuffer b = Ended(100, {kStreamA});
  EXPECT_FALSE(gpu.BoundWait(4, true, 1'000, 500));  // the wait starts
  EXPECT_FALSE(gpu.BoundWait(4, true, 1'499, 500));
  EXPECT_TRUE(gpu.BoundWait(4, true, 1'500, 500));
  // Step 4 and those before it wait no more; later ones do.
  EXPECT_FALSE(gpu.Awaits(4, &b, nullptr));
  EXPECT_FALSE(gpu.Awaits(3, &b, nullptr));
  EXPECT_TRUE(gpu.Awaits(5, &b, nullptr));
  EXPECT_TRUE(gpu.gpu());  // it delivered work: later steps still wait for it
}

TEST(GpuWorkProgressTest, AWaitThatStopsOrMovesStartsOver) {
  GpuWorkProgress gpu;
  gpu.Expect();
  EXPECT_FALSE(gpu.BoundWait(1, true, 0 + 1, 500));
  EXPECT_FALSE(gpu.BoundWait(1, false, 400, 500));   // not awaited any more
  EXPECT_FALSE(gpu.BoundWait(1, true, 600, 500));    // starts again at 600
  EXPECT_FALSE(gpu.BoundWait(2, true, 1'000, 500));  // another step: again
  EXPECT_FALSE(gpu.BoundWait(2, true, 1'499, 500));
  EXPECT_TRUE(gpu.BoundWait(2, true, 1'500, 500));
}

TEST(GpuWorkProgressTest, ADeviceThatNeverDeliveredWorkIsNoLongerWaitedFor) {
  GpuWorkProgress gpu;
  gpu.Expect();  // said it has GPUs
  EXPECT_FALSE(gpu.BoundWait(0, true, 0 + 1, 10));
  EXPECT_TRUE(gpu.BoundWait(0, true, 11, 10));
  EXPECT_FALSE(gpu.gpu());
  const DeviceStepBuffer b = Ended(100);
  EXPECT_FALSE(gpu.Awaits(7, &b, nullptr));
}

}  // namespace
}  // namespace trainscope::collector

// GpuActivityTracer and NCCL collectives: the collective's external id tags
// its kernel with the group, sequence and bytes, and a collective level left
// open on a thread is closed at that thread's next collective.
#include <cstdint>
#include <vector>

#include "gpu/gpu_activity_tracer.h"
#include "gpu/gpu_activity_tracer_fixture.h"
#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST_F(TracerTest, NcclKernelsCarryTheirCollectivesGroupSequenceAndBytes) {
  // The plugin brackets a c10d collective's launch (nccl:all_reduce on a CUDA
  // tensor) with CollectiveBegin/End; CUPTI tags the launch's records with the
  // pushed id (CUSTOM1), and the NCCL kernel becomes a GPU collective with the
  // CPU record's group, sequence and bytes, so the analysis can pair it
  // across ranks (wait: the kernel's start against its peers'; transfer: its
  // duration over the bytes).
  Start();
  const StringId name = strings_.Intern("nccl:all_reduce");
  const StringId group = strings_.Intern("pg:1[0,1]");
  GpuCollectiveLaunch launch;
  launch.name = name;
  launch.kind = CollectiveKind::kAllReduce;
  launch.group = group;
  launch.group_sequence = 17;
  launch.bytes = 4096;
  tracer_->CollectiveBegin(launch);
  const uint64_t collective_id = fake_.last_pushed;
  EXPECT_NE(collective_id, 0u);
  tracer_->CollectiveEnd();
  EXPECT_EQ(fake_.pops, 1);

  const uint64_t at = kCuptiAhead + 1000;
  B b;
  b.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, collective_id, 30));
  b.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, 211, at, at + 5, 42, 30));
  b.Add(B::Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", at + 50, at + 950, 0, 9, 30));
  fake_.pending.push_back(b);
  tracer_->RunTimerTurnForTest();
  const std::vector<GpuEventRecord> out = Drain();
  ASSERT_EQ(out.size(), 2u);
  const GpuEventRecord& kernel = out[1];
  EXPECT_EQ(kernel.event.kind, EventKind::kGpuCollective);
  EXPECT_EQ(kernel.event.group, group);
  EXPECT_EQ(kernel.event.aux, 17u);  // the group sequence column
  EXPECT_EQ(kernel.event.value, 4096u);
  EXPECT_EQ(kernel.event.detail, static_cast<uint16_t>(CollectiveKind::kAllReduce));
  EXPECT_EQ(kernel.event.end_ns - kernel.event.start_ns, 900);
}

TEST_F(TracerTest, ACollectiveLevelLeftOpenIsDroppedAtTheThreadsNextCollective) {
  // A c10d range that ended on another thread never closed this thread's
  // level; the next collective here closes it first instead of nesting.
  Start();
  tracer_->CollectiveBegin(GpuCollectiveLaunch{});
  EXPECT_EQ(fake_.pushes, 1);
  tracer_->CollectiveBegin(GpuCollectiveLaunch{});
  EXPECT_EQ(fake_.pushes, 2);
  EXPECT_EQ(fake_.pops, 1);  // the stale level
  tracer_->CollectiveEnd();
  EXPECT_EQ(fake_.pops, 2);
  tracer_->CollectiveEnd();  // nothing of ours left to pop
  EXPECT_EQ(fake_.pops, 2);
}

}  // namespace
}  // namespace trainscope::agent

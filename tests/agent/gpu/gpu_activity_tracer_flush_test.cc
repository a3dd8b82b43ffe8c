// GpuActivityTracer's buffers and flushes: the bounded pool and the records
// lost past it, timer and step flushes that leave unfinished work with
// CUPTI, a forced flush's losses, and a buffer CUPTI keeps too long.
#include <cstdint>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gpu/gpu_activity_tracer.h"
#include "gpu/gpu_activity_tracer_fixture.h"
#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST_F(TracerTest, BuffersAreBoundedAndLostRecordsCounted) {
  GpuActivityTracer::Options options;
  options.buffer_bytes = 64 << 10;
  options.max_buffers = 1;
  Start(options);
  const StringId op = strings_.Intern("aten::add");
  for (uint32_t i = 0; i < 3; ++i)
    fake_.pending.push_back(Launch(op, 10 + i, kCuptiAhead + i * 1000));
  tracer_->RunWorkerTurnForTest();
  // CUPTI wanted three buffers at once; the pool has one: two refused, and
  // CUPTI's six records that had nowhere to go are counted.
  const GpuActivity::Counters counters = tracer_->counters();
  EXPECT_EQ(counters.buffers_refused, 2u);
  EXPECT_EQ(counters.records_lost, 6u);
  EXPECT_EQ(tracer_->pool().allocated(), 1u);
  EXPECT_EQ(Drain().size(), 2u);
  // The one buffer is reused by the next flush.
  fake_.pending.push_back(Launch(op, 20, kCuptiAhead + 9000));
  tracer_->RunWorkerTurnForTest();
  EXPECT_EQ(Drain().size(), 2u);
  EXPECT_EQ(tracer_->pool().allocated(), 1u);
}

TEST_F(TracerTest, TimerAndStepFlushesLeaveUnfinishedWorkWithCuptiUntilTheDeviceIsDone) {
  // A device-bound step: at the step mark the kernels it launched are still
  // running. The step's flush must not take their buffer (a forced flush
  // loses such records for good: 151 of 550 kernels per step on an H100).
  Start();
  const StringId op = strings_.Intern("aten::mm");
  Hold(Unfinished(op, 1, kCuptiAhead + 100));
  tracer_->StepBoundary();
  tracer_->RunTimerTurnForTest();
  EXPECT_EQ(fake_.forced_flushes, 0);
  EXPECT_TRUE(Drain().empty());
  EXPECT_EQ(tracer_->pool().in_use(), 1u);  // still CUPTI's
  FinishHeld(Launch(op, 1, kCuptiAhead + 100));
  tracer_->RunTimerTurnForTest();
  const std::vector<GpuEventRecord> out = Drain();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].event.kind, EventKind::kGpuKernel);
  EXPECT_EQ(out[1].launch_op, op);
  EXPECT_EQ(tracer_->counters().records_lost, 0u);
  EXPECT_EQ(tracer_->pool().in_use(), 0u);
}

TEST_F(TracerTest, AForcedFlushDropsAndCountsRecordsOfUnfinishedWork) {
  Start();
  const StringId op = strings_.Intern("aten::mm");
  Hold(Unfinished(op, 1, kCuptiAhead + 100));
  tracer_->Yield();  // a hand-over forces the flush
  EXPECT_EQ(fake_.forced_flushes, 1);
  const std::vector<GpuEventRecord> out = Drain();
  ASSERT_EQ(out.size(), 1u);  // the launch call, not a kernel with made-up times
  EXPECT_EQ(out[0].event.kind, EventKind::kGpuRuntime);
  EXPECT_EQ(tracer_->counters().records_lost, 1u);
  EXPECT_EQ(tracer_->pool().in_use(), 0u);
}

TEST_F(TracerTest, ABufferCuptiKeepsPastTheStallPeriodsIsForcedOut) {
  // After its kinds were disabled and enabled again CUPTI kept a buffer that
  // default flushes never returned (an H100, CUPTI 13.0): the worker forces
  // it out once nothing came back for stall_periods flush periods.
  GpuActivityTracer::Options options;
  options.flush_period = absl::Milliseconds(10);
  options.stall_periods = 2;
  StartWithTimer(options);
  tracer_->Yield();
  tracer_->Resume();
  const uint64_t forced_before = tracer_->forced_flushes();
  const StringId op = strings_.Intern("aten::mm");
  Hold(Launch(op, 1, kCuptiAhead + 100));  // complete, but never handed over unforced
  for (int i = 0; i < 1000 && tracer_->pool().in_use() > 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(tracer_->pool().in_use(), 0u);
  EXPECT_GT(tracer_->forced_flushes(), forced_before);
  EXPECT_EQ(Drain().size(), 2u);
}

}  // namespace
}  // namespace trainscope::agent

// GpuActivityTracer handing CUPTI over to another client (torch.profiler,
// Nsight) and taking it back: yielding while another subscriber holds it,
// on request (Yield/Resume), with buffers completed to the other client's
// callbacks, and repeatedly on a profiler's schedule.
#include <cstdint>
#include <vector>

#include "gpu/gpu_activity_tracer.h"
#include "gpu/gpu_activity_tracer_fixture.h"
#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST_F(TracerTest, YieldsWhileAnotherClientHoldsCuptiSaysSoOnceAndResumes) {
  fake_.subscribe = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;  // e.g. torch.profiler
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kYielded);
  EXPECT_EQ(LogLinesWith("another CUPTI client"), 1);
  EXPECT_TRUE(fake_.enabled.empty());
  tracer_->OperatorBegin(strings_.Intern("aten::mm"), 1);  // nothing pushed while yielded
  tracer_->OperatorEnd();
  EXPECT_EQ(fake_.pushes, 0);
  EXPECT_EQ(fake_.pops, 0);

  tracer_->RunWorkerTurnForTest();  // still held: retried, not said again
  EXPECT_EQ(fake_.subscribes, 2);
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kYielded);
  EXPECT_EQ(LogLinesWith("another CUPTI client"), 1);

  fake_.subscribe = CUPTI_SUCCESS;  // the other client let go
  tracer_->RunWorkerTurnForTest();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_EQ(LogLinesWith("resumed"), 1);
  EXPECT_EQ(fake_.enabled.size(), 7u);
  fake_.pending.push_back(Launch(strings_.Intern("aten::mm"), 5, kCuptiAhead + 100));
  tracer_->RunWorkerTurnForTest();
  EXPECT_EQ(Drain().size(), 2u);
}

TEST_F(TracerTest, AnEnableRefusedForAnotherSubscriberYieldsAndLetsGo) {
  fake_.enable[CUPTI_ACTIVITY_KIND_MEMCPY] = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kYielded);
  EXPECT_TRUE(fake_.enabled.empty());  // what was enabled is disabled again
  EXPECT_FALSE(fake_.subscribed);
  EXPECT_EQ(fake_.unsubscribes, 1);
}

TEST_F(TracerTest, YieldOnRequestReleasesCuptiUntilResume) {
  Start();
  const StringId op = strings_.Intern("aten::mm");
  tracer_->OperatorBegin(op, 1);  // pushed while active
  fake_.pending.push_back(Launch(op, 1, kCuptiAhead + 100));
  tracer_->Yield();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kYielded);
  EXPECT_TRUE(fake_.enabled.empty());
  EXPECT_FALSE(fake_.subscribed);
  EXPECT_EQ(fake_.forced_flushes, 1);
  EXPECT_EQ(Drain().size(), 2u);  // what CUPTI held came back before letting go
  tracer_->OperatorEnd();         // still popped: it was pushed
  EXPECT_EQ(fake_.pops, 1);
  tracer_->OperatorBegin(op, 2);    // not pushed while yielded ...
  tracer_->RunWorkerTurnForTest();  // ... and no retry while the host asked to yield
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kYielded);
  tracer_->Resume();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_FALSE(fake_.subscribed);  // the subscription was only a probe
  tracer_->OperatorEnd();          // ... so not popped after resuming either
  EXPECT_EQ(fake_.pushes, 1);
  EXPECT_EQ(fake_.pops, 1);
}

TEST_F(TracerTest, ResumeOnRequestTakesTheActivityApiEvenIfTheOtherClientKeepsItsSubscription) {
  Start();
  tracer_->Yield();
  // torch.profiler's Kineto subscribes at its first start and never lets go.
  CUpti_SubscriberHandle kineto = nullptr;
  ASSERT_EQ(fake_.Api().subscribe(&kineto, nullptr, nullptr), CUPTI_SUCCESS);
  tracer_->RunWorkerTurnForTest();  // no retry while yielded on request
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kYielded);
  tracer_->Resume();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_EQ(fake_.enabled.size(), 7u);
  EXPECT_EQ(LogLinesWith("keeps its CUPTI subscription"), 1);
  fake_.pending.push_back(Launch(strings_.Intern("aten::mm"), 1, kCuptiAhead + 100));
  tracer_->RunWorkerTurnForTest();
  EXPECT_EQ(Drain().size(), 2u);
  // Yielding again does not drop the other client's subscription.
  tracer_->Yield();
  EXPECT_TRUE(fake_.subscribed);
  EXPECT_TRUE(fake_.enabled.empty());
}

TEST_F(TracerTest, BuffersCompletedToAnotherClientsCallbacksAreTakenBackAtTheNextYield) {
  GpuActivityTracer::Options options;
  options.max_buffers = 1;
  Start(options);
  // torch.profiler starts without a yield: its callbacks replace ours, and the
  // buffer CUPTI holds goes to it.
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  fake_.requested(&buffer, &size, &max_records);
  ASSERT_NE(buffer, nullptr);
  fake_.completed = [](CUcontext, uint32_t, uint8_t*, size_t, size_t) {};  // Kineto's
  EXPECT_EQ(tracer_->pool().in_use(), 1u);
  tracer_->Yield();
  EXPECT_EQ(tracer_->pool().in_use(), 0u);
  EXPECT_EQ(LogLinesWith("went to another client's callbacks"), 1);
  tracer_->Resume();  // registers our callbacks again
  fake_.pending.push_back(Launch(strings_.Intern("aten::mm"), 1, kCuptiAhead + 100));
  tracer_->RunWorkerTurnForTest();
  EXPECT_EQ(Drain().size(), 2u);  // the one buffer is ours again
}

TEST_F(TracerTest, RepeatedHandOversAreSaidOnceAndKernelsComeAfterEachResume) {
  // torch.profiler on a schedule: a yield and a resume per cycle.
  Start();
  const StringId op = strings_.Intern("aten::mm");
  for (uint32_t cycle = 1; cycle <= 3; ++cycle) {
    tracer_->Yield();
    EXPECT_TRUE(fake_.enabled.empty());
    tracer_->Resume();
    EXPECT_EQ(fake_.enabled.size(), 7u);
    Hold(Unfinished(op, cycle, kCuptiAhead + cycle * 1000));
    tracer_->RunTimerTurnForTest();  // the kernel still runs: its buffer stays
    EXPECT_TRUE(Drain().empty()) << cycle;
    FinishHeld(Launch(op, cycle, kCuptiAhead + cycle * 1000));
    tracer_->RunTimerTurnForTest();
    const std::vector<GpuEventRecord> out = Drain();
    ASSERT_EQ(out.size(), 2u) << cycle;
    EXPECT_EQ(out[1].event.kind, EventKind::kGpuKernel);
    EXPECT_EQ(out[1].launch_op, op);
  }
  EXPECT_EQ(LogLinesWith("paused on request"), 1);
  EXPECT_EQ(LogLinesWith("resumed"), 1);
  EXPECT_EQ(tracer_->counters().records_lost, 0u);
}

}  // namespace
}  // namespace trainscope::agent

// GpuActivityTracer on a FakeCupti: what it enables and subscribes, how
// completed buffers become events on the agent's clock, the operator and
// thread tags, and its lifecycle (a permanent failure, one tracer per
// process, a stop, a dormant agent). The hand-over to other CUPTI clients,
// the buffers and flushes, and the collectives have files of their own.
#include "gpu/gpu_activity_tracer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gpu/gpu_activity_tracer_fixture.h"
#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST_F(TracerTest, CompletedBuffersBecomeEventsOnTheAgentsClock) {
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_EQ(fake_.enabled.size(),
            7u);  // kernels, runtime, driver, copies, memsets, syncs, external
  // CUPTI's one subscriber stays free for a torch.profiler that starts later.
  EXPECT_FALSE(fake_.subscribed);
  EXPECT_EQ(fake_.subscribes, 1);
  EXPECT_EQ(fake_.unsubscribes, 1);
  EXPECT_EQ(LogLinesWith("GPU activity on"), 1);
  // The offset of the tightest bracket: agent = cupti - kCuptiAhead + 1 - 1.
  EXPECT_TRUE(tracer_->clock().has_offset());
  EXPECT_EQ(tracer_->clock().offset_ns(), -static_cast<int64_t>(kCuptiAhead));

  const StringId op = strings_.Intern("aten::mm");
  tracer_->OperatorBegin(op, 3);
  EXPECT_EQ(fake_.pushes, 1);
  EXPECT_EQ(ActivityRecordConverter::OperatorNameOf(fake_.last_pushed), op);
  tracer_->OperatorEnd();
  EXPECT_EQ(fake_.pops, 1);

  const uint64_t at = kCuptiAhead + 5'000'000;
  fake_.pending.push_back(Launch(op, 1, at));
  tracer_->RunWorkerTurnForTest();
  const std::vector<GpuEventRecord> out = Drain();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].event.kind, EventKind::kGpuRuntime);
  EXPECT_EQ(out[1].event.kind, EventKind::kGpuKernel);
  EXPECT_EQ(out[1].event.start_ns, 5'000'000 + 20);
  EXPECT_EQ(out[1].launch_op, op);
  EXPECT_EQ(out[1].launch_delta_ns, -20);
  EXPECT_EQ(tracer_->pool().in_use(), 0u);  // the buffer went back
}

TEST_F(TracerTest, OnlyTheCallsTheConverterKeepsAreRecordedSwitchedOffAfterTheKinds) {
  fake_.single_call_switches = true;
  Start();
  // The fake names every call cudaGetDevice but 211 (cudaLaunchKernel), in
  // both domains: all are switched off but the two 211s.
  const size_t others = (CUPTI_RUNTIME_TRACE_CBID_SIZE - 2) + (CUPTI_DRIVER_TRACE_CBID_SIZE - 2);
  EXPECT_EQ(fake_.switched_off.size(), others);
  EXPECT_EQ(std::count(fake_.switched_off.begin(), fake_.switched_off.end(), 211u), 0);
  // After all 7 kinds: enabling a kind resets the single calls (and with
  // only single calls enabled CUPTI 13.0 records nothing).
  for (size_t kinds : fake_.kinds_enabled_at_switch) ASSERT_EQ(kinds, 7u);
  // A hand-over and back: the new Acquire switches them off again, after
  // enabling the kinds again.
  tracer_->Yield();
  tracer_->Resume();
  EXPECT_EQ(fake_.switched_off.size(), 2 * others);
  for (size_t kinds : fake_.kinds_enabled_at_switch) ASSERT_EQ(kinds, 7u);
}

TEST_F(TracerTest, AThreadsRuntimeCallsCarryItsOsThreadId) {
  Start();
  const StringId op = strings_.Intern("aten::mm");
  tracer_->OperatorBegin(op, 1);  // registers this thread
  tracer_->OperatorEnd();
  B b;
  b.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, 211, kCuptiAhead + 10, kCuptiAhead + 20,
                CuptiThreadMap::CurrentCuptiId(), 1));
  fake_.pending.push_back(b);
  tracer_->RunWorkerTurnForTest();
  const std::vector<GpuEventRecord> out = Drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].thread, static_cast<uint32_t>(::syscall(SYS_gettid)));
}

TEST_F(TracerTest, OperatorDepthBoundsThePushes) {
  GpuActivityTracer::Options options;
  options.operator_depth = 1;
  Start(options);
  tracer_->OperatorBegin(1, 1);
  tracer_->OperatorBegin(2, 2);  // nested: not pushed at depth 1
  tracer_->OperatorEnd();
  tracer_->OperatorEnd();
  EXPECT_EQ(fake_.pushes, 1);
  EXPECT_EQ(fake_.pops, 1);
  // A collective is pushed at any depth.
  tracer_->OperatorBegin(1, 3);
  tracer_->OperatorBegin(2, 4);
  tracer_->CollectiveBegin(GpuCollectiveLaunch{});
  tracer_->CollectiveEnd();
  tracer_->OperatorEnd();
  tracer_->OperatorEnd();
  EXPECT_EQ(fake_.pushes, 3);
  EXPECT_EQ(fake_.pops, 3);
}

TEST_F(TracerTest, OperatorDepthZeroPushesNothing) {
  GpuActivityTracer::Options options;
  options.operator_depth = 0;
  Start(options);
  tracer_->OperatorBegin(1, 1);
  tracer_->OperatorEnd();
  EXPECT_EQ(fake_.pushes, 0);
  EXPECT_EQ(fake_.pops, 0);
}

TEST_F(TracerTest, AnOptionalKindThatCannotRunIsNamedAndTheRestRecorded) {
  fake_.enable[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION] = CUPTI_ERROR_NOT_SUPPORTED;
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_EQ(fake_.enabled.size(), 6u);
  EXPECT_EQ(LogLinesWith("not recorded: SYNCHRONIZATION"), 1);
}

TEST_F(TracerTest, APermanentFailureIsSaidOnceAndEverythingElseIsANoOp) {
  fake_.subscribe = CUPTI_ERROR_UNKNOWN;  // what CUPTI 13 says without a driver
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kUnavailable);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_TRUE(absl::StrContains(log_[0], "GPU activity off: cuptiSubscribe failed")) << log_[0];
  EXPECT_TRUE(absl::StrContains(log_[0], "training continues")) << log_[0];
  tracer_->StepBoundary();
  tracer_->RunWorkerTurnForTest();
  tracer_->Resume();
  tracer_->OperatorBegin(1, 1);
  tracer_->OperatorEnd();
  EXPECT_EQ(fake_.subscribes, 1);  // never retried
  EXPECT_EQ(fake_.pushes, 0);
  EXPECT_EQ(log_.size(), 1u);
}

TEST_F(TracerTest, OnlyOneTracerPerProcess) {
  Start();
  GpuActivityTracer::Sinks sinks;
  sinks.queue = &queue_;
  sinks.intern = [this](std::string_view text) { return strings_.Intern(text); };
  sinks.now = &FakeCupti::Now;
  auto second = GpuActivityTracer::Start(fake_.Api(), {}, std::move(sinks));
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::StrContains(second.status().message(), "one activity client per process"));
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);  // the first is untouched
}

TEST_F(TracerTest, AStoppedTracerLetsTheNextOneTakeCupti) {
  // A detached PyTorch session's agent lives on until the next detach; the
  // next attach in the process must get GPU activity all the same.
  Start();
  tracer_->Stop();
  EXPECT_FALSE(fake_.subscribed);
  std::unique_ptr<GpuActivityTracer> first = std::move(tracer_);
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_EQ(LogLinesWith("GPU activity on"), 2);
  fake_.pending.push_back(Launch(strings_.Intern("aten::mm"), 1, kCuptiAhead + 100));
  tracer_->RunTimerTurnForTest();
  EXPECT_EQ(Drain().size(), 2u);
  first.reset();  // the old one's destruction leaves the new one registered
  fake_.pending.push_back(Launch(strings_.Intern("aten::mm"), 2, kCuptiAhead + 200));
  tracer_->RunTimerTurnForTest();
  EXPECT_EQ(Drain().size(), 2u);
}

TEST_F(TracerTest, DormantAgentKeepsNoEventsAndStopSendsWhatStillWaits) {
  Start();
  recording_ = false;
  fake_.pending.push_back(Launch(strings_.Intern("aten::mm"), 1, kCuptiAhead + 100));
  tracer_->RunWorkerTurnForTest();
  EXPECT_TRUE(Drain().empty());
  recording_ = true;
  B orphan;  // a kernel whose launch never comes
  orphan.Add(B::Kernel("lonely", kCuptiAhead + 500, kCuptiAhead + 600, 0, 3, 99));
  fake_.pending.push_back(orphan);
  tracer_->RunWorkerTurnForTest();
  EXPECT_TRUE(Drain().empty());  // waiting for its launch
  tracer_->Stop();
  const std::vector<GpuEventRecord> out = Drain();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].correlation, 0u);
  EXPECT_EQ(tracer_->counters().unresolved, 1u);
  EXPECT_FALSE(fake_.subscribed);
}

}  // namespace
}  // namespace trainscope::agent

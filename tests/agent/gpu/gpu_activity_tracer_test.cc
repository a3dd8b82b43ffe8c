// GpuActivityTracer against a fake CUPTI function table (this file's only
// fake): buffers flow from the fake's flush through the bounded pool and the
// converter into the queue; the fake can refuse a subscriber, as CUPTI does
// while torch.profiler or Nsight holds it.
#include "gpu/gpu_activity_tracer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gpu/synthetic_activity_buffer.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {
namespace {

using B = SyntheticActivityBuffer;

constexpr uint64_t kCuptiAhead = 1'000'000'000'000;  // the fake CUPTI clock runs this far ahead

// The fake CUPTI's state (its functions are plain function pointers).
struct Fake {
  CUptiResult subscribe = CUPTI_SUCCESS;
  std::map<CUpti_ActivityKind, CUptiResult> enable;  // default CUPTI_SUCCESS
  bool subscribed = false;
  int subscribes = 0;
  int unsubscribes = 0;
  std::vector<CUpti_ActivityKind> enabled;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  std::vector<B> pending;  // buffers CUPTI will fill and complete at the next flush
  // Buffers CUPTI holds with records of device work still running: a default
  // flush keeps them, a forced one hands them over as they are.
  struct Held {
    uint8_t* buffer = nullptr;
    B records;
  };
  std::vector<Held> held ABSL_GUARDED_BY(mu);
  // Finished held buffers.
  std::vector<std::pair<uint8_t*, size_t>> completions_due ABSL_GUARDED_BY(mu);
  size_t dropped = 0;  // records CUPTI could not store (no buffer)
  int forced_flushes = 0;
  int pushes = 0;
  int pops = 0;
  uint64_t last_pushed = 0;
  std::atomic<int64_t> now{1'000'000};
  // CUPTI 12.4+'s single-call switches (null in the api unless set): the
  // kinds enabled when each switch came, and the calls switched off.
  bool single_call_switches = false;
  std::vector<size_t> kinds_enabled_at_switch;
  std::vector<uint32_t> switched_off;
  base::Mutex mu;  // pending/held/completions_due: the worker's timer flushes too
};
Fake* fake = nullptr;

CUptiResult CUPTIAPI GetVersion(uint32_t* v) {
  *v = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI ResultString(CUptiResult r, const char** text) {
  *text = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
              : "CUPTI_ERROR_SOMETHING";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc, void*) {
  ++fake->subscribes;
  if (fake->subscribe != CUPTI_SUCCESS) return fake->subscribe;
  if (fake->subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake->subscribed = true;
  *handle = reinterpret_cast<CUpti_SubscriberHandle>(fake);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Unsubscribe(CUpti_SubscriberHandle) {
  ++fake->unsubscribes;
  fake->subscribed = false;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Register(CUpti_BuffersCallbackRequestFunc requested,
                              CUpti_BuffersCallbackCompleteFunc completed) {
  fake->requested = requested;
  fake->completed = completed;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Enable(CUpti_ActivityKind kind) {
  auto it = fake->enable.find(kind);
  if (it != fake->enable.end() && it->second != CUPTI_SUCCESS) return it->second;
  fake->enabled.push_back(kind);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Disable(CUpti_ActivityKind kind) {
  std::erase(fake->enabled, kind);
  return CUPTI_SUCCESS;
}
// Like CUPTI holding several buffers at once: every pending buffer is
// requested first, then each one obtained is completed.
CUptiResult CUPTIAPI FlushAll(uint32_t flag) {
  base::MutexLock lock(&fake->mu);
  if (flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ++fake->forced_flushes;
  std::vector<B> pending;
  pending.swap(fake->pending);
  std::vector<std::pair<uint8_t*, size_t>> obtained;
  obtained.swap(fake->completions_due);
  for (const B& records : pending) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    fake->requested(&buffer, &size, &max_records);
    if (buffer == nullptr || size < records.size()) {
      fake->dropped += records.Records().size();
      obtained.emplace_back(nullptr, 0);
      continue;
    }
    obtained.emplace_back(buffer, records.CopyTo(buffer, size));
  }
  if (flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
    std::vector<Fake::Held> held;
    held.swap(fake->held);
    for (const Fake::Held& h : held) {
      obtained.emplace_back(h.buffer, h.records.CopyTo(h.buffer, h.records.size()));
    }
  }
  for (auto [buffer, valid] : obtained) {
    if (buffer != nullptr) fake->completed(nullptr, 0, buffer, 0, valid);
  }
  return CUPTI_SUCCESS;
}
// CUPTI takes a buffer and starts writing `records` of work still running.
void Hold(const B& records) {
  base::MutexLock lock(&fake->mu);
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  fake->requested(&buffer, &size, &max_records);
  ASSERT_NE(buffer, nullptr);
  fake->held.push_back(Fake::Held{buffer, records});
}
// The device finished the held work: its buffer completes at the next flush.
void FinishHeld(const B& finished) {
  base::MutexLock lock(&fake->mu);
  ASSERT_FALSE(fake->held.empty());
  uint8_t* buffer = fake->held.front().buffer;
  fake->held.erase(fake->held.begin());
  const size_t valid = finished.CopyTo(buffer, finished.size());
  fake->completions_due.emplace_back(buffer, valid);
}
CUptiResult CUPTIAPI Dropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = fake->dropped;
  fake->dropped = 0;  // CUPTI counts since the last call
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Push(CUpti_ExternalCorrelationKind, uint64_t id) {
  ++fake->pushes;
  fake->last_pushed = id;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Pop(CUpti_ExternalCorrelationKind, uint64_t* id) {
  ++fake->pops;
  *id = 0;
  return CUPTI_SUCCESS;
}
int64_t FakeNow() { return fake->now.fetch_add(2) + 2; }  // each reading 2 ns later
CUptiResult CUPTIAPI Timestamp(uint64_t* t) {
  // Read between two FakeNow calls: the agent's clock + 1, plus the lead.
  *t = static_cast<uint64_t>(fake->now.load() + 1) + kCuptiAhead;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI CallbackName(CUpti_CallbackDomain, uint32_t cbid, const char** name) {
  *name = cbid == 211 ? "cudaLaunchKernel_v7000" : "cudaGetDevice_v3020";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI SwitchCall(CUpti_CallbackId cbid, uint8_t enable) {
  fake->kinds_enabled_at_switch.push_back(fake->enabled.size());
  if (!enable) fake->switched_off.push_back(cbid);
  return CUPTI_SUCCESS;
}

CuptiApi FakeApi() {
  CuptiApi api;
  if (fake->single_call_switches) {
    api.activity_enable_runtime_api = &SwitchCall;
    api.activity_enable_driver_api = &SwitchCall;
  }
  api.get_version = &GetVersion;
  api.get_result_string = &ResultString;
  api.subscribe = &Subscribe;
  api.unsubscribe = &Unsubscribe;
  api.activity_register_callbacks = &Register;
  api.activity_enable = &Enable;
  api.activity_disable = &Disable;
  api.activity_flush_all = &FlushAll;
  api.activity_get_next_record = &SyntheticActivityBuffer::NextRecord;
  api.activity_get_num_dropped_records = &Dropped;
  api.activity_push_external_correlation_id = &Push;
  api.activity_pop_external_correlation_id = &Pop;
  api.get_timestamp = &Timestamp;
  api.get_callback_name = &CallbackName;
  return api;
}

class TracerTest : public ::testing::Test {
 protected:
  TracerTest() : strings_(512, 1000), queue_(1024) { fake = &fake_; }
  ~TracerTest() override {
    tracer_.reset();
    fake = nullptr;
  }

  void Start(GpuActivityTracer::Options options = {}) {
    options.flush_period = absl::Hours(1);  // the tests drive the worker's turns
    StartWithTimer(options);
  }
  void StartWithTimer(GpuActivityTracer::Options options) {
    // Each delivered buffer's events go at once (the reorder window is
    // tested with the converter): the fake's buffers come back in order.
    options.converter.reorder_hold_ns = 0;
    GpuActivityTracer::Sinks sinks;
    sinks.queue = &queue_;
    sinks.intern = [this](std::string_view text) { return strings_.Intern(text); };
    sinks.recording = [this] { return recording_.load(); };
    sinks.log = [this](const std::string& line) { log_.push_back(line); };
    sinks.now = &FakeNow;
    auto tracer = GpuActivityTracer::Start(FakeApi(), options, std::move(sinks));
    ASSERT_TRUE(tracer.ok()) << tracer.status();
    tracer_ = *std::move(tracer);
  }

  // A launch (call 211) of a kernel, in CUPTI's clock, with its operator.
  static B Launch(StringId op, uint32_t correlation, uint64_t at) {
    B b;
    b.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                      ActivityRecordConverter::OperatorExternalId(op, 1), correlation));
    b.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, 211, at, at + 5, 42, correlation));
    b.Add(B::Kernel("gemm", at + 20, at + 80, 0, 7, correlation));
    return b;
  }

  std::vector<GpuEventRecord> Drain() {
    std::vector<GpuEventRecord> out;
    queue_.Consume(1 << 20, [&](const GpuEventRecord& e) { out.push_back(e); });
    return out;
  }

  int LogLinesWith(const std::string& text) const {
    int n = 0;
    for (const std::string& line : log_) n += absl::StrContains(line, text);
    return n;
  }

  Fake fake_;
  StringTable strings_;
  GpuEventQueue queue_;
  std::atomic<bool> recording_{true};
  std::vector<std::string> log_;
  std::unique_ptr<GpuActivityTracer> tracer_;
};

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

TEST_F(TracerTest, AnOptionalKindThatCannotRunIsNamedAndTheRestRecorded) {
  fake_.enable[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION] = CUPTI_ERROR_NOT_SUPPORTED;
  Start();
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);
  EXPECT_EQ(fake_.enabled.size(), 6u);
  EXPECT_EQ(LogLinesWith("not recorded: SYNCHRONIZATION"), 1);
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
  ASSERT_EQ(Subscribe(&kineto, nullptr, nullptr), CUPTI_SUCCESS);
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
  sinks.now = &FakeNow;
  auto second = GpuActivityTracer::Start(FakeApi(), {}, std::move(sinks));
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::StrContains(second.status().message(), "one activity client per process"));
  EXPECT_EQ(tracer_->counters().state, GpuActivityState::kActive);  // the first is untouched
}

// A kernel launched (its call record written) whose device record is not
// finished: start known, end 0, as CUPTI hands it over when forced.
B Unfinished(StringId op, uint32_t correlation, uint64_t at) {
  B b;
  b.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                    ActivityRecordConverter::OperatorExternalId(op, 1), correlation));
  b.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, 211, at, at + 5, 42, correlation));
  b.Add(B::Kernel("gemm", at + 20, 0, 0, 7, correlation));
  return b;
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

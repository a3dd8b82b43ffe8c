// Test helper: a fake CUPTI function table for GpuActivityTracer's tests, so
// the tracer's whole path (subscribe, enable, buffer requests and
// completions through the bounded pool, flushes, external correlation
// pushes, the hand-over to and from another CUPTI client) runs without a
// GPU or libcupti. It behaves like CUPTI where the tracer depends on it:
// one subscriber at a time (a second gets MULTIPLE_SUBSCRIBERS, as while
// torch.profiler or Nsight holds it), a flush requests every pending buffer
// before completing any, buffers of device work still running stay with
// CUPTI until the work finishes or a forced flush hands them over as they
// are, and its clock runs kCuptiAhead ahead of the agent's (Now).
//
// Usage:
//   FakeCupti fake;  // the current fake until destroyed
//   fake.pending.push_back(records);  // filled and completed at the next flush
//   auto tracer = GpuActivityTracer::Start(fake.Api(), options, sinks);  // sinks.now =
//   &FakeCupti::Now fake.Hold(unfinished); ...; fake.FinishHeld(finished);
//
// Threading: CUPTI's entries are plain function pointers, so one FakeCupti
// exists at a time (process-wide). The buffer entries (the flush, Hold,
// FinishHeld) lock a mutex, since the tracer's worker flushes on its timer;
// the test's other fields are for the test thread and the calls it makes.
#ifndef TRAINSCOPE_TESTS_AGENT_GPU_FAKE_CUPTI_H_
#define TRAINSCOPE_TESTS_AGENT_GPU_FAKE_CUPTI_H_

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "gpu/cupti_api.h"
#include "gpu/synthetic_activity_buffer.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class FakeCupti {
 public:
  static constexpr uint64_t kCuptiAhead = 1'000'000'000'000;  // CUPTI's clock runs this far ahead

  FakeCupti();
  ~FakeCupti();
  FakeCupti(const FakeCupti&) = delete;
  FakeCupti& operator=(const FakeCupti&) = delete;

  // The function table pointing at this fake (with the single-call switches
  // of CUPTI 12.4+ when single_call_switches is set).
  CuptiApi Api() const;
  // The agent's clock: each reading 2 ns later than the one before.
  static int64_t Now();
  // CUPTI takes a buffer and starts writing `records` of work still running.
  void Hold(const SyntheticActivityBuffer& records);
  // The device finished the oldest held work: its buffer completes at the
  // next flush with `finished` in it.
  void FinishHeld(const SyntheticActivityBuffer& finished);

  // What CUPTI answers.
  CUptiResult subscribe = CUPTI_SUCCESS;
  std::map<CUpti_ActivityKind, CUptiResult> enable;  // default CUPTI_SUCCESS
  bool single_call_switches = false;
  // Buffers CUPTI will fill and complete at the next flush.
  std::vector<SyntheticActivityBuffer> pending;

  // What the tracer did.
  bool subscribed = false;
  int subscribes = 0;
  int unsubscribes = 0;
  std::vector<CUpti_ActivityKind> enabled;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  int forced_flushes = 0;
  int pushes = 0;
  int pops = 0;
  uint64_t last_pushed = 0;
  // The single-call switches: the kinds enabled when each came, and the
  // calls switched off.
  std::vector<size_t> kinds_enabled_at_switch;
  std::vector<uint32_t> switched_off;

 private:
  struct Held {
    uint8_t* buffer = nullptr;
    SyntheticActivityBuffer records;
  };

  static CUptiResult CUPTIAPI GetVersion(uint32_t* v);
  static CUptiResult CUPTIAPI ResultString(CUptiResult r, const char** text);
  static CUptiResult CUPTIAPI Subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc, void*);
  static CUptiResult CUPTIAPI Unsubscribe(CUpti_SubscriberHandle);
  static CUptiResult CUPTIAPI Register(CUpti_BuffersCallbackRequestFunc requested,
                                       CUpti_BuffersCallbackCompleteFunc completed);
  static CUptiResult CUPTIAPI Enable(CUpti_ActivityKind kind);
  static CUptiResult CUPTIAPI Disable(CUpti_ActivityKind kind);
  static CUptiResult CUPTIAPI FlushAll(uint32_t flag);
  static CUptiResult CUPTIAPI Dropped(CUcontext, uint32_t, size_t* dropped);
  static CUptiResult CUPTIAPI Push(CUpti_ExternalCorrelationKind, uint64_t id);
  static CUptiResult CUPTIAPI Pop(CUpti_ExternalCorrelationKind, uint64_t* id);
  static CUptiResult CUPTIAPI Timestamp(uint64_t* t);
  static CUptiResult CUPTIAPI CallbackName(CUpti_CallbackDomain, uint32_t cbid, const char** name);
  static CUptiResult CUPTIAPI SwitchCall(CUpti_CallbackId cbid, uint8_t enable);

  // Buffers CUPTI holds with records of device work still running: a default
  // flush keeps them, a forced one hands them over as they are.
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
  // Finished held buffers.
  std::vector<std::pair<uint8_t*, size_t>> completions_due_ ABSL_GUARDED_BY(mu_);
  size_t dropped_ = 0;  // records CUPTI could not store (no buffer)
  std::atomic<int64_t> now_{1'000'000};
  base::Mutex mu_;  // pending/held/completions_due: the worker's timer flushes too
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_TESTS_AGENT_GPU_FAKE_CUPTI_H_

#include "gpu/gpu_activity_tracer.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpu/traced_api_calls.h"

namespace trainscope::agent {

namespace {

std::atomic<GpuActivityTracer*> g_tracer{nullptr};
std::atomic<uint64_t> g_next_serial{1};
__thread uint64_t tls_registered_serial __attribute__((tls_model("initial-exec"))) = 0;

// Which external correlation levels this thread pushed (bit d: level d).
struct CorrelationStack {
  uint64_t pushed = 0;
  uint32_t depth = 0;
};
constexpr uint32_t kMaxTrackedDepth = 64;  // deeper levels are not pushed
__thread CorrelationStack tls_operators __attribute__((tls_model("initial-exec")));
__thread CorrelationStack tls_collectives __attribute__((tls_model("initial-exec")));

void CUPTIAPI IgnoreCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};
constexpr Kind kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", false},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", false},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", false},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", false},
};

void Push(const CuptiApi& api, CorrelationStack& stack, CUpti_ExternalCorrelationKind kind,
          uint64_t id, bool active, uint32_t max_depth) {
  if (stack.depth < kMaxTrackedDepth) {
    const bool pushed = active && stack.depth < max_depth &&
                        api.activity_push_external_correlation_id(kind, id) == CUPTI_SUCCESS;
    const uint64_t bit = uint64_t{1} << stack.depth;
    stack.pushed = pushed ? (stack.pushed | bit) : (stack.pushed & ~bit);
  }
  ++stack.depth;
}

void Pop(const CuptiApi& api, CorrelationStack& stack, CUpti_ExternalCorrelationKind kind) {
  if (stack.depth == 0) return;  // an end without a begin: nothing of ours to pop
  --stack.depth;
  if (stack.depth < kMaxTrackedDepth && ((stack.pushed >> stack.depth) & 1) != 0) {
    uint64_t last = 0;
    api.activity_pop_external_correlation_id(kind, &last);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuActivityTracer>> GpuActivityTracer::Start(const CuptiApi& api,
                                                                            Options options,
                                                                            Sinks sinks) {
  if (sinks.queue == nullptr || !sinks.intern || !sinks.now) {
    return absl::InvalidArgumentError("GpuActivityTracer sinks: expected a queue, intern and now");
  }
  std::unique_ptr<GpuActivityTracer> tracer(
      new GpuActivityTracer(api, std::move(options), std::move(sinks)));
  GpuActivityTracer* expected = nullptr;
  if (!g_tracer.compare_exchange_strong(expected, tracer.get())) {
    tracer->stopped_for_start_failure_ = true;
    return absl::FailedPreconditionError(
        "another trainscope agent in this process already records GPU activity (CUPTI has one "
        "activity client per process)");
  }
  {
    base::MutexLock lock(&tracer->state_mu_);
    tracer->Acquire(/*first=*/true);
  }
  if (tracer->state_.load() != GpuActivityState::kUnavailable) {
    tracer->worker_ = std::thread([t = tracer.get()] { t->WorkerLoop(); });
  }
  return tracer;
}

GpuActivityTracer::GpuActivityTracer(const CuptiApi& api, Options options, Sinks sinks)
    : api_(api),
      options_(std::move(options)),
      sinks_(std::move(sinks)),
      pool_(options_.buffer_bytes, options_.max_buffers),
      collectives_(options_.collective_slots),
      serial_(g_next_serial.fetch_add(1)),
      converter_(options_.converter, &clock_, &collectives_, sinks_.intern, &api_) {
  converter_.set_thread_map(&threads_);
}

void GpuActivityTracer::RegisterThread() {
  if (tls_registered_serial == serial_) return;
  tls_registered_serial = serial_;
  threads_.RegisterCurrentThread();
}

GpuActivityTracer::~GpuActivityTracer() {
  if (stopped_for_start_failure_) return;  // never owned CUPTI
  Stop();
  Unregister();
}

void GpuActivityTracer::Unregister() {
  GpuActivityTracer* self = this;
  g_tracer.compare_exchange_strong(self, nullptr);
}

void GpuActivityTracer::Log(const std::string& line) const {
  if (sinks_.log) sinks_.log(line);
}

void GpuActivityTracer::Acquire(bool first, bool on_request) {
  // The subscription is a probe for another client, not kept: a subscriber
  // held by the agent would make a torch.profiler that starts later give up
  // CUDA activities for the whole process (Kineto subscribes once, at its
  // first start, and then says "CUPTI initialization failed").
  CUptiResult result = api_.subscribe(&subscriber_, &IgnoreCallback, nullptr);
  const bool kept_by_other = on_request && result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (result != CUPTI_SUCCESS && !kept_by_other) return Fail("cuptiSubscribe", result);
  if (result == CUPTI_SUCCESS) api_.unsubscribe(subscriber_);
  subscribed_ = false;
  result = api_.activity_register_callbacks(&BufferRequested, &BufferCompleted);
  if (result != CUPTI_SUCCESS) return Fail("cuptiActivityRegisterCallbacks", result);
  std::vector<std::string> missing;
  bool sync = false;
  for (const Kind& kind : kKinds) {
    result = api_.activity_enable(kind.kind);
    if (result == CUPTI_SUCCESS) {
      enabled_.push_back(kind.kind);
      sync = sync || kind.kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
      continue;
    }
    if (kind.required || result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      return Fail(absl::StrCat("cuptiActivityEnable(", kind.name, ")"), result);
    }
    missing.push_back(absl::StrCat(kind.name, " (", api_.ResultName(result), ")"));
  }
  // After the kinds: enabling them resets which single calls are recorded.
  TracedApiCalls::DropOthers(api_);
  {
    base::MutexLock lock(&convert_mu_);
    converter_.set_sync_records(sync);
  }
  SampleClock();
  last_delivery_ns_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  active_.store(true, std::memory_order_release);
  state_.store(GpuActivityState::kActive);
  said_yield_ = false;
  std::string line = first           ? "GPU activity on"
                     : kept_by_other ? "GPU activity resumed on request (another client keeps "
                                       "its CUPTI subscription: announce its next start with "
                                       "a yield)"
                                     : "GPU activity resumed (CUPTI is free again)";
  if (!missing.empty()) absl::StrAppend(&line, "; not recorded: ", absl::StrJoin(missing, ", "));
  if (!on_request || !said_request_yield_) Log(line);
}

void GpuActivityTracer::Fail(const std::string& call, CUptiResult result) {
  for (CUpti_ActivityKind kind : enabled_) api_.activity_disable(kind);
  enabled_.clear();
  if (subscribed_) {
    api_.unsubscribe(subscriber_);
    subscribed_ = false;
  }
  active_.store(false, std::memory_order_release);
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    state_.store(GpuActivityState::kYielded);
    next_retry_ = absl::Now() + options_.flush_period;
    if (!said_yield_) {
      said_yield_ = true;
      Log(absl::StrCat(
          "GPU activity paused: another CUPTI client (torch.profiler, Nsight, ...) "
          "holds CUPTI (",
          call, ": ", api_.ResultName(result), "); retrying at step marks, at most every ",
          absl::FormatDuration(options_.flush_period)));
    }
    return;
  }
  state_.store(GpuActivityState::kUnavailable);
  Log(absl::StrCat("GPU activity off: ", call, " failed with ", api_.ResultName(result),
                   result == CUPTI_ERROR_UNKNOWN || result == CUPTI_ERROR_NOT_INITIALIZED
                       ? " (no usable CUDA driver or GPU?)"
                       : "",
                   "; training continues without GPU timing"));
}

void GpuActivityTracer::Release() {
  active_.store(false, std::memory_order_release);
  for (CUpti_ActivityKind kind : enabled_) api_.activity_disable(kind);
  enabled_.clear();
  // Every buffer comes back now, to our callbacks unless another client
  // replaced them; what is still out after that was given to it.
  api_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (const size_t lost = pool_.ReclaimAll(); lost > 0) {
    Log(absl::StrCat("GPU activity: ", lost,
                     " CUPTI buffer(s) went to another client's callbacks (it started without "
                     "a yield; the events in them are lost); taken back"));
  }
  if (subscribed_) {
    api_.unsubscribe(subscriber_);
    subscribed_ = false;
  }
}

void GpuActivityTracer::SampleClock() {
  for (int i = 0; i < 3; ++i) {
    uint64_t cupti = 0;
    const int64_t before = sinks_.now();
    const CUptiResult result = api_.get_timestamp(&cupti);
    const int64_t after = sinks_.now();
    if (result == CUPTI_SUCCESS && cupti != 0) clock_.AddSample(before, cupti, after);
  }
  clock_.Commit();
}

void GpuActivityTracer::OperatorBegin(StringId name, uint64_t sequence) {
  RegisterThread();
  Push(api_, tls_operators, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
       ActivityRecordConverter::OperatorExternalId(name, sequence),
       active_.load(std::memory_order_relaxed), options_.operator_depth);
}

void GpuActivityTracer::OperatorEnd() {
  Pop(api_, tls_operators, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
}

void GpuActivityTracer::CollectiveBegin(const GpuCollectiveLaunch& launch) {
  RegisterThread();
  // Collectives do not nest: a level still open here was begun by a
  // collective whose range ended on another thread (which cannot pop this
  // thread's CUPTI stack). Dropped now, so it names no later launch.
  while (tls_collectives.depth > 0) {
    Pop(api_, tls_collectives, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1);
  }
  const bool active = active_.load(std::memory_order_relaxed);
  Push(api_, tls_collectives, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
       active ? collectives_.Register(launch) : 0, active, kMaxTrackedDepth);
}

void GpuActivityTracer::CollectiveEnd() {
  Pop(api_, tls_collectives, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1);
}

void GpuActivityTracer::StepBoundary() {
  base::MutexLock lock(&wake_mu_);
  wake_ = true;
  wake_cv_.Signal();
}

void GpuActivityTracer::Yield() {
  base::MutexLock lock(&state_mu_);
  yield_requested_ = true;
  if (stopped_ || state_.load() != GpuActivityState::kActive) return;
  Release();
  state_.store(GpuActivityState::kYielded);
  // Once per tracer: a profiler run on a schedule yields at every cycle.
  if (!said_request_yield_) {
    Log("GPU activity paused on request (another CUPTI client is starting; later pauses and "
        "resumes on request are not said)");
  }
}

void GpuActivityTracer::Resume() {
  base::MutexLock lock(&state_mu_);
  yield_requested_ = false;
  if (stopped_ || state_.load() != GpuActivityState::kYielded) return;
  Acquire(/*first=*/false, /*on_request=*/true);
  said_request_yield_ = true;
}

void GpuActivityTracer::Send(const GpuEventRecord& event) {
  if (!sinks_.recording || sinks_.recording()) sinks_.queue->Push(event);
}

void GpuActivityTracer::WorkerTurn(bool force_retry, bool force_flush) {
  base::MutexLock lock(&state_mu_);
  if (stopped_) return;
  const GpuActivityState state = state_.load();
  if (state == GpuActivityState::kActive) {
    // Default flush (see Flush flavours); forced only when buffers stayed out
    // with nothing delivered for stall_periods periods.
    const int64_t now_ns = absl::ToUnixNanos(absl::Now());
    const bool stalled =
        pool_.in_use() > 0 &&
        now_ns - last_delivery_ns_.load(std::memory_order_relaxed) >=
            absl::ToInt64Nanoseconds(options_.flush_period * options_.stall_periods);
    if (force_flush || stalled) {
      forced_flushes_.fetch_add(1, std::memory_order_relaxed);
      api_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      // Nothing came back either: restart the stall clock, not a forced
      // flush at every turn.
      last_delivery_ns_.store(now_ns, std::memory_order_relaxed);
    } else {
      api_.activity_flush_all(0);
    }
    SampleClock();
    base::MutexLock convert_lock(&convert_mu_);
    converter_.ReleaseQuiet(sinks_.now(), [this](const GpuEventRecord& e) { Send(e); });
  } else if (state == GpuActivityState::kYielded && !yield_requested_ &&
             (force_retry || absl::Now() >= next_retry_)) {
    next_retry_ = absl::Now() + options_.flush_period;
    Acquire(/*first=*/false);
  }
}

void GpuActivityTracer::WorkerLoop() {
  while (true) {
    {
      base::MutexLock lock(&wake_mu_);
      if (!wake_ && !quit_) wake_cv_.WaitWithTimeout(&wake_mu_, options_.flush_period);
      if (quit_) return;
      wake_ = false;
    }
    WorkerTurn(/*force_retry=*/false, /*force_flush=*/false);
  }
}

void GpuActivityTracer::Stop() {
  {
    base::MutexLock lock(&wake_mu_);
    quit_ = true;
    wake_cv_.Signal();
  }
  if (worker_.joinable()) worker_.join();
  {
    base::MutexLock lock(&state_mu_);
    if (stopped_) return;
    stopped_ = true;
    if (state_.load() == GpuActivityState::kActive) Release();
  }
  {
    base::MutexLock lock(&convert_mu_);
    converter_.FinishAll([this](const GpuEventRecord& e) { Send(e); });
  }
  // CUPTI is let go: the next agent of the process (a re-attach while this
  // one's owner still keeps it) may take it.
  Unregister();
}

GpuActivity::Counters GpuActivityTracer::counters() const {
  Counters counters;
  counters.state = state_.load();
  counters.buffers_refused = pool_.refused();
  base::MutexLock lock(&convert_mu_);
  counters.records_lost =
      records_lost_.load(std::memory_order_relaxed) + converter_.stats().incomplete;
  counters.unresolved = converter_.stats().unresolved;
  counters.out_of_order = converter_.stats().out_of_order;
  return counters;
}

void CUPTIAPI GpuActivityTracer::BufferRequested(uint8_t** buffer, size_t* size,
                                                 size_t* max_records) {
  GpuActivityTracer* tracer = g_tracer.load(std::memory_order_acquire);
  *max_records = 0;  // as many as fit
  *buffer = tracer != nullptr ? tracer->pool_.Acquire() : nullptr;
  *size = *buffer != nullptr ? tracer->pool_.buffer_bytes() : 0;
}

void CUPTIAPI GpuActivityTracer::BufferCompleted(CUcontext context, uint32_t stream_id,
                                                 uint8_t* buffer, size_t size, size_t valid_size) {
  GpuActivityTracer* tracer = g_tracer.load(std::memory_order_acquire);
  if (tracer == nullptr || buffer == nullptr) return;
  tracer->last_delivery_ns_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  tracer->OnBufferCompleted(context, stream_id, buffer, valid_size);
}

void GpuActivityTracer::OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                          size_t valid_size) {
  {
    base::MutexLock lock(&convert_mu_);
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 &&
           api_.activity_get_next_record(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      converter_.Add(record);
    }
    converter_.Finish([this](const GpuEventRecord& e) { Send(e); });
  }
  size_t dropped = 0;
  if (api_.activity_get_num_dropped_records(context, stream_id, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    records_lost_.fetch_add(dropped, std::memory_order_relaxed);
  }
  pool_.Release(buffer);
}

}  // namespace trainscope::agent

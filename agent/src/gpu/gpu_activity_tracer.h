// Records GPU activity through the CUPTI Activity API: kernels (NCCL ones as
// collectives), copies, memsets, host synchronisation and the runtime/driver
// calls that launched them, each tied to the operator around its launch, on
// the agent's clock, into the agent's GPU event queue.
//
// Usage (by Agent, when AgentOptions::gpu_activity):
//   absl::StatusOr<CuptiLoader::Loaded> cupti = CuptiLoader::Load(...);
//   auto tracer = GpuActivityTracer::Start(cupti->api, options, sinks);
//   // tracer->counters().state: kActive, kYielded or kUnavailable (said once)
//   training thread: tracer->OperatorBegin(name, seq) ... OperatorEnd();
//   step mark: tracer->StepBoundary();   at the end: tracer->Stop();
//
// Buffers: CUPTI fills buffers from a bounded ActivityBufferPool; each
// completed buffer is converted (ActivityRecordConverter) and its events
// pushed into the queue at once. A worker thread calls cuptiActivityFlushAll
// every flush_period and whenever StepBoundary asks, so a step's records
// reach the sender at least once per step without the training thread
// waiting for CUPTI; it also re-reads the clock offset (GpuClockMap).
//
// Flush flavours: the worker's flush is CUPTI's default one, which hands over
// every buffer whose records are all complete, full or not. A forced flush
// (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) also hands over buffers holding records
// of device work not finished yet, and CUPTI never completes those records
// afterwards: forced flushes at every step mark lost most kernels of a
// device-bound run (ResNet-50 at batch 256 on an H100: 151 kernels exported
// per step against 550 at batch 64, whose host-bound steps leave little in
// flight). So the tracer forces a flush only where the work is over or must
// be handed over (Yield, Stop) and when default flushes delivered nothing
// for `stall_periods` flush periods while buffers were out (a buffer CUPTI
// would otherwise keep for good, e.g. after its kinds were disabled and
// enabled again). Incomplete records a forced flush returns are dropped and
// counted (records_lost), never sent with made-up times.
//
// One CUPTI client: the activity API is process-wide and CUPTI allows one
// subscriber. Before enabling anything the tracer subscribes (cuptiSubscribe)
// and lets go at once: the probe detects another client without keeping
// CUPTI from one that starts later (torch.profiler's Kineto subscribes at its
// first start and, refused, records no CUDA activity in the process):
//   - cuptiSubscribe, cuptiActivityRegisterCallbacks or cuptiActivityEnable
//     returning CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED means another
//     client (torch.profiler's Kineto, Nsight Systems, ...) holds CUPTI: the
//     tracer yields (state kYielded), says so once, and tries again at step
//     boundaries and on its timer (at most once per flush_period) until it
//     succeeds, then says it resumed;
//   - Yield() (the host knows another client is about to start, e.g. the
//     plugin sees torch.profiler start) releases CUPTI (kinds disabled,
//     buffers flushed, unsubscribed) until Resume(). Resume() takes the
//     activity API back even when the other client keeps its subscription:
//     torch 2.11's Kineto subscribes when torch.profiler first starts and never
//     unsubscribes, so waiting for the subscription would wait forever (seen
//     on an H100), while its activity recording ends with the profile. The
//     host must therefore Yield before each torch.profiler start: a Kineto
//     that finds CUPTI subscribed at its first start gives up CUDA activities
//     for the whole process ("CUPTI initialization failed").
//   - any other failure (no driver: cuptiSubscribe says CUPTI_ERROR_UNKNOWN;
//     insufficient privileges, ...) is permanent: kUnavailable, said once,
//     training unaffected.
// The tracer does not register a CUPTI timestamp callback (see GpuClockMap).
// A client that starts unannounced while the tracer is active takes the
// activity API (its callbacks replace the tracer's): its own trace is whole,
// the tracer's events stop until the host's Yield/Resume around it (the
// PyTorch plugin brackets torch.profiler with them). Re-enabling CUPTI's
// kinds right after disabling them, with no other client in between, lost
// kernel records on an H100 (CUPTI 13.0) while every flush was forced (see
// Flush flavours); Yield/Resume are still meant for real hand-overs.
// One tracer may be active per process (CUPTI's buffer callbacks carry no
// context): a second Start is refused until the first one has stopped (Stop,
// not its destruction: a detached PyTorch session is freed one attach later,
// and the next attach in the process must get CUPTI).
//
// Threading: every public method may be called from any thread. The push and
// pop of external correlation ids are per thread (CUPTI keeps a stack per
// thread); a thread-local bit stack remembers which levels were pushed, so a
// state change between an operator's begin and end never unbalances it. The
// first OperatorBegin or CollectiveBegin of a thread also registers the
// thread's OS id (CuptiThreadMap), so its runtime calls land on its track.
// Conversion runs under one mutex on whichever thread CUPTI completes a
// buffer on.
#ifndef TRAINSCOPE_AGENT_SRC_GPU_GPU_ACTIVITY_TRACER_H_
#define TRAINSCOPE_AGENT_SRC_GPU_GPU_ACTIVITY_TRACER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gpu/activity_buffer_pool.h"
#include "gpu/activity_record_converter.h"
#include "gpu/collective_launch_table.h"
#include "gpu/cupti_api.h"
#include "gpu/cupti_thread_map.h"
#include "gpu/gpu_activity.h"
#include "gpu/gpu_clock_map.h"
#include "gpu/gpu_event_queue.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class GpuActivityTracer : public GpuActivity {
 public:
  struct Options {
    size_t buffer_bytes = 512 << 10;  // see AgentOptions::gpu_buffer_bytes
    size_t max_buffers = 128;
    absl::Duration flush_period = absl::Seconds(1);
    ActivityRecordConverter::Options converter;
    size_t collective_slots = 4096;
    // Operator nesting levels whose external correlation is pushed: 64 (all:
    // kernels name their innermost operator), 1 (top-level operators only),
    // 0 (none: a push and a pop cost about 280 ns per operator on an H100
    // host; kernels then keep only their launch call's thread and time).
    uint32_t operator_depth = 64;
    // Flush periods without a delivered buffer, while buffers are out, after
    // which the worker forces a flush (see Flush flavours).
    int stall_periods = 3;
  };
  struct Sinks {
    GpuEventQueue* queue = nullptr;               // where events go; must outlive the tracer
    ActivityRecordConverter::Intern intern;       // the agent's string table
    std::function<bool()> recording;              // false: events are not kept (dormant)
    std::function<void(const std::string&)> log;  // one line per state change
    std::function<int64_t()> now;                 // the agent's clock (Agent::Now)
  };

  // Takes CUPTI (or finds it held: kYielded, or unusable: kUnavailable, each
  // said once through sinks.log); only a second active tracer in the process
  // is an error.
  static absl::StatusOr<std::unique_ptr<GpuActivityTracer>> Start(const CuptiApi& api,
                                                                  Options options, Sinks sinks);
  ~GpuActivityTracer() override;  // Stop()

  void OperatorBegin(StringId name, uint64_t sequence) override;
  void OperatorEnd() override;
  void CollectiveBegin(const GpuCollectiveLaunch& launch) override;
  void CollectiveEnd() override;
  void StepBoundary() override;
  void Yield() override;
  void Resume() override;
  void Stop() override;
  Counters counters() const override;

  // The worker's turn, for tests that do not want to wait for the timer:
  // flushes CUPTI (forced: the caller synchronised the device first),
  // re-reads the clock, retries a yielded CUPTI.
  void RunWorkerTurnForTest() { WorkerTurn(/*force_retry=*/true, /*force_flush=*/true); }
  // Exactly the turn the timer or a step mark runs.
  void RunTimerTurnForTest() { WorkerTurn(/*force_retry=*/false, /*force_flush=*/false); }
  const GpuClockMap& clock() const { return clock_; }
  const ActivityBufferPool& pool() const { return pool_; }
  uint64_t forced_flushes() const { return forced_flushes_.load(std::memory_order_relaxed); }

 private:
  GpuActivityTracer(const CuptiApi& api, Options options, Sinks sinks);

  // CUPTI's buffer callbacks (static: CUPTI passes no context).
  static void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                       size_t size, size_t valid_size);
  void OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t valid_size);

  // Subscribes, registers and enables; sets state_. On the host's Resume
  // (`on_request`), a subscription another client keeps does not stop it.
  void Acquire(bool first, bool on_request = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  void Release() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  // Undoes a partial Acquire and records why it failed.
  void Fail(const std::string& call, CUptiResult result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  void SampleClock();
  // Hands one converted event to the queue (while recording).
  void Send(const GpuEventRecord& event);
  void WorkerTurn(bool force_retry, bool force_flush);
  // Lets another tracer Start (once per tracer).
  void Unregister();
  void WorkerLoop();
  void Log(const std::string& line) const;
  // Once per thread: tells the converter this thread's OS id.
  void RegisterThread();

  const CuptiApi api_;
  const Options options_;
  const Sinks sinks_;
  ActivityBufferPool pool_;
  GpuClockMap clock_;
  CollectiveLaunchTable collectives_;
  CuptiThreadMap threads_;
  const uint64_t serial_;  // unique per tracer: keys each thread's registration

  // True while kinds are enabled: the hot path's one relaxed load.
  std::atomic<bool> active_{false};
  std::atomic<GpuActivityState> state_{GpuActivityState::kOff};
  std::atomic<uint64_t> records_lost_{0};
  // When a completed buffer last came back (absl::ToUnixNanos): stall check.
  std::atomic<int64_t> last_delivery_ns_{0};
  std::atomic<uint64_t> forced_flushes_{0};

  mutable base::Mutex state_mu_;  // acquire/release/yield and the worker's turn
  CUpti_SubscriberHandle subscriber_ ABSL_GUARDED_BY(state_mu_) = nullptr;
  bool subscribed_ ABSL_GUARDED_BY(state_mu_) = false;
  std::vector<CUpti_ActivityKind> enabled_ ABSL_GUARDED_BY(state_mu_);
  bool yield_requested_ ABSL_GUARDED_BY(state_mu_) = false;
  bool said_yield_ ABSL_GUARDED_BY(state_mu_) = false;
  bool said_request_yield_ ABSL_GUARDED_BY(state_mu_) = false;  // a Yield/Resume pair was said
  absl::Time next_retry_ ABSL_GUARDED_BY(state_mu_) = absl::InfinitePast();
  bool stopped_ ABSL_GUARDED_BY(state_mu_) = false;

  mutable base::Mutex convert_mu_;  // the converter, fed by CUPTI's completions
  ActivityRecordConverter converter_ ABSL_GUARDED_BY(convert_mu_);

  base::Mutex wake_mu_;
  base::CondVar wake_cv_;
  bool wake_ ABSL_GUARDED_BY(wake_mu_) = false;
  bool quit_ ABSL_GUARDED_BY(wake_mu_) = false;
  std::thread worker_;
  bool stopped_for_start_failure_ = false;  // a second tracer: never touched CUPTI
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_GPU_ACTIVITY_TRACER_H_

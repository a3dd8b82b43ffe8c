// One attachment of the plugin to this process: the agent, the operator hook,
// step boundaries, phases, memory counters and the halt logic.
//
// Usage:
//   SessionOptions options;
//   options.agent.job_id = "resnet"; options.agent.rank = 0; ...
//   absl::StatusOr<std::unique_ptr<PluginSession>> s =
//       PluginSession::Start(std::move(options), MakeRecordFunctionHook);
//   // at every step boundary, on the training thread:
//   PluginSession::Boundary b = (*s)->OnStepBoundary(std::nullopt, std::nullopt);
//   if (b.halt) { (*s)->HaltHandled(); on_halt(b.reason); throw HaltRequested; }
//   (*s)->Close(absl::Seconds(5));
//
// Steps: a step mark's value is the step that starts there (agent.proto);
// the session counts from options.first_step, one per boundary.
// Halts: the agent's on_halt (its reader thread) only notes the halt and arms
// the watchdog; the boundary that starts a step >= HaltRequest.halt_at_step
// reports `halt` (once) on the training thread. If no such boundary comes
// within halt_grace_s, the control thread calls options.terminate (default:
// SIGTERM to this process).
// The control thread (20 ms tick) also turns the operator hook on and off as
// the collector switches recording, and keeps the tick clock calibrated.
//
// Threading: OnStepBoundary, HaltHandled, RecordPhase from the training
// thread; SetStage, collectives(), stats() and Close() from any thread.
// Close is idempotent; the objects the callbacks reach stay valid until the
// session is destroyed.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_PLUGIN_SESSION_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_PLUGIN_SESSION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clock.h"
#include "collective_tracker.h"
#include "halt_watchdog.h"
#include "memory_probe.h"
#include "observer_targets.h"
#include "op_name_table.h"
#include "operator_hook.h"
#include "step_phase_tracker.h"
#include "trainscope/agent/agent.h"
#include "trainscope/base/mutex.h"

namespace trainscope::pytorch {

struct SessionOptions {
  agent::AgentOptions agent;  // on_halt is the session's own
  // FLOPs of matrix/convolution operators from their input shapes.
  bool shapes = true;
  // Shapes are captured during one step in this many (1: every step). Boxing
  // the inputs costs every operator while the capture is on.
  uint32_t shapes_every_n_steps = 1;
  double halt_grace_s = 30.0;  // <= 0: no SIGTERM fallback
  uint64_t first_step = 0;
  TickClock::Source clock = TickClock::Source::kAuto;
  std::function<void()> terminate;  // default: SIGTERM to this process
};

class PluginSession {
 public:
  static absl::StatusOr<std::unique_ptr<PluginSession>> Start(SessionOptions options,
                                                              const OperatorHookFactory& hook);
  ~PluginSession();
  PluginSession(const PluginSession&) = delete;
  PluginSession& operator=(const PluginSession&) = delete;

  struct Boundary {
    uint64_t step = 0;  // the step starting here
    bool halt = false;  // raise HaltRequested now (reported once)
    std::string reason;
  };
  // The accelerator's memory as its caching allocator reports it (torch.cuda).
  struct DeviceMemory {
    uint64_t allocated = 0;  // held by tensors now
    uint64_t peak = 0;       // the most ever held by tensors (since the last reset)
    uint64_t reserved = 0;   // held by the allocator from the device (allocated + cached)
  };
  // `completed_step`: the index of the step that just ended (explicit loops),
  // nullopt: one more than before. `device_memory`: the accelerator's memory
  // (memory.allocated_bytes, memory.peak_bytes, memory.reserved_bytes);
  // nullopt: the process's resident set and its peak are reported instead.
  Boundary OnStepBoundary(std::optional<uint64_t> completed_step,
                          std::optional<DeviceMemory> device_memory);
  // The training loop reached the halting boundary: the watchdog stands down.
  void HaltHandled() { watchdog_.Disarm(); }

  // An explicit phase (trainscope.phase); from then on the derived forward /
  // backward / data-wait phases are no longer recorded, to avoid doubles.
  void RecordPhase(agent::Phase phase, int64_t start_ns, int64_t end_ns);

  // This device's pipeline stage (agent.proto's "pipeline.stage" counter):
  // recorded now and again at every step boundary, so a collector or feed
  // that joins later (or a dormant agent switched on) still learns it.
  void SetStage(uint64_t stage);
  std::optional<uint64_t> stage() const;

  CollectiveTracker& collectives() { return *collectives_; }

  uint64_t step() const { return running_step_.load(std::memory_order_relaxed); }
  bool halt_pending() const { return agent_->halt_requested() && !halt_reported_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  agent::AgentStats stats() const;
  agent::Agent& agent() { return *agent_; }
  const TickClock& clock() const { return clock_; }

  // Removes the hook, stops the control thread and shuts the agent down
  // (flushing until `deadline`; `error`: why the process ends abnormally,
  // for Goodbye.error). Idempotent.
  void Close(absl::Duration deadline, std::string error = {});

 private:
  explicit PluginSession(SessionOptions options);
  void ControlLoop();
  void SyncHook();
  void OnHalt(const agent::HaltInfo& info);

  SessionOptions options_;
  TickClock clock_;
  HaltWatchdog watchdog_;
  MemoryProbe memory_;
  StepPhaseTracker phases_;
  std::atomic<uint64_t> running_step_{0};
  std::atomic<bool> closed_{false};

  // Training-thread state.
  int64_t last_boundary_ns_ = 0;
  bool explicit_phases_ = false;
  bool halt_reported_ = false;

  // Control-thread state.
  bool hook_recording_ = false;
  bool hook_shapes_ = false;
  std::atomic<bool> shapes_this_step_{true};

  base::Mutex control_mu_;
  base::CondVar control_cv_;
  bool stop_control_ = false;  // guarded by control_mu_
  std::thread control_thread_;

  agent::StringId flops_name_ = agent::kEmptyString;
  agent::StringId memory_allocated_name_ = agent::kEmptyString;
  agent::StringId memory_peak_name_ = agent::kEmptyString;
  agent::StringId memory_reserved_name_ = agent::kEmptyString;
  agent::StringId stage_name_ = agent::kEmptyString;
  std::atomic<int64_t> stage_{-1};  // -1: not set
  ObserverTargets targets_;
  std::unique_ptr<OpNameTable> names_;
  std::unique_ptr<CollectiveTracker> collectives_;
  mutable base::Mutex stats_mu_;
  std::optional<agent::AgentStats> final_stats_;  // guarded by stats_mu_; set by Close
  // Declared after what their threads use, so they are destroyed first.
  std::unique_ptr<agent::Agent> agent_;
  base::Mutex hook_mu_;                  // SetRecording/SetShapes vs Close
  std::unique_ptr<OperatorHook> hook_;  // guarded by hook_mu_
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_PLUGIN_SESSION_H_

#include "plugin_session.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"

namespace trainscope::pytorch {
namespace {

std::atomic<uint64_t> g_next_generation{1};

constexpr absl::Duration kControlTick = absl::Milliseconds(20);
constexpr int kRecalibrateEveryTicks = 5;

}  // namespace

PluginSession::PluginSession(SessionOptions options)
    : options_(std::move(options)), clock_(options_.clock) {
  running_step_.store(options_.first_step, std::memory_order_relaxed);
  if (!options_.terminate) {
    options_.terminate = [] { kill(getpid(), SIGTERM); };
  }
  if (options_.shapes_every_n_steps == 0) options_.shapes_every_n_steps = 1;
}

absl::StatusOr<std::unique_ptr<PluginSession>> PluginSession::Start(
    SessionOptions options, const OperatorHookFactory& hook_factory) {
  std::unique_ptr<PluginSession> session(new PluginSession(std::move(options)));
  PluginSession* const self = session.get();
  agent::AgentOptions agent_options = self->options_.agent;
  agent_options.on_halt = [self](const agent::HaltInfo& info) { self->OnHalt(info); };
  agent_options.tick_mapper = &self->clock_;  // the hook records raw ticks
  absl::StatusOr<std::unique_ptr<agent::Agent>> agent = agent::Agent::Start(agent_options);
  if (!agent.ok()) return agent.status();
  self->agent_ = *std::move(agent);
  self->names_ = std::make_unique<OpNameTable>(self->agent_.get());
  self->collectives_ = std::make_unique<CollectiveTracker>(self->agent_.get());
  self->flops_name_ = self->agent_->Intern("flops");
  self->memory_allocated_name_ = self->agent_->Intern("memory.allocated_bytes");
  self->memory_peak_name_ = self->agent_->Intern("memory.peak_bytes");
  self->memory_reserved_name_ = self->agent_->Intern("memory.reserved_bytes");
  self->stage_name_ = self->agent_->Intern("pipeline.stage");

  ObserverTargets& t = self->targets_;
  t.generation = g_next_generation.fetch_add(1);
  t.agent = self->agent_.get();
  t.clock = &self->clock_;
  t.names = self->names_.get();
  t.collectives = self->collectives_.get();
  t.phases = &self->phases_;
  t.running_step = &self->running_step_;
  t.flops_name = self->flops_name_;
  t.gpu_requested = self->options_.agent.gpu_activity;
  absl::StatusOr<std::unique_ptr<OperatorHook>> hook = hook_factory(&self->targets_);
  if (!hook.ok()) {
    self->agent_->Shutdown(absl::ZeroDuration());
    return hook.status();
  }
  self->hook_ = *std::move(hook);
  self->last_boundary_ns_ = agent::Agent::Now();
  self->SyncHook();  // recording from the start unless dormant
  self->control_thread_ = std::thread([self] { self->ControlLoop(); });
  return session;
}

PluginSession::~PluginSession() { Close(absl::ZeroDuration()); }

void PluginSession::OnHalt(const agent::HaltInfo& info) {
  // The agent's reader thread: note it, arm the fallback, nothing else.
  if (options_.halt_grace_s > 0) {
    watchdog_.Arm(agent::Agent::Now() + static_cast<int64_t>(options_.halt_grace_s * 1e9));
  }
  (void)info;  // the boundary reads the details from the agent
}

void PluginSession::SyncHook() {
  base::MutexLock lock(&hook_mu_);
  if (hook_ == nullptr) return;
  const bool recording = agent_->recording();
  const bool shapes =
      recording && options_.shapes && shapes_this_step_.load(std::memory_order_relaxed);
  if (recording != hook_recording_) {
    hook_->SetRecording(recording);
    hook_recording_ = recording;
  }
  if (shapes != hook_shapes_) {
    hook_->SetShapes(shapes);
    hook_shapes_ = shapes;
  }
}

void PluginSession::ControlLoop() {
  int tick = 0;
  control_mu_.Lock();
  while (!stop_control_) {
    control_cv_.WaitWithTimeout(&control_mu_, kControlTick);
    if (stop_control_) break;
    control_mu_.Unlock();
    SyncHook();
    if (++tick % kRecalibrateEveryTicks == 0) clock_.Recalibrate();
    if (watchdog_.Expired(agent::Agent::Now())) {
      std::fprintf(stderr,
                   "trainscope: a halt was requested %.1f s ago and the training loop has not "
                   "reached a step boundary since; sending SIGTERM\n",
                   options_.halt_grace_s);
      options_.terminate();
    }
    control_mu_.Lock();
  }
  control_mu_.Unlock();
}

PluginSession::Boundary PluginSession::OnStepBoundary(
    std::optional<uint64_t> completed_step,
    std::optional<DeviceMemory> device_memory) {
  const int64_t now = agent::Agent::Now();
  const uint64_t completed =
      completed_step.has_value() ? *completed_step : running_step_.load(std::memory_order_relaxed);
  const uint64_t next = completed + 1;

  const StepPhaseTracker::Spans spans = phases_.TakeAndReset(clock_);
  if (!explicit_phases_) {
    int64_t first_op = spans.forward_start;
    if (spans.backward_start != 0 && (first_op == 0 || spans.backward_start < first_op)) {
      first_op = spans.backward_start;
    }
    if (first_op > last_boundary_ns_) {
      agent_->RecordPhase(agent::Phase::kDataWait, completed, last_boundary_ns_, first_op);
    }
    if (spans.forward_start != 0) {
      agent_->RecordPhase(agent::Phase::kForward, completed, spans.forward_start,
                          spans.forward_end);
    }
    if (spans.backward_start != 0) {
      agent_->RecordPhase(agent::Phase::kBackward, completed, spans.backward_start,
                          spans.backward_end);
    }
  }
  running_step_.store(next, std::memory_order_relaxed);
  agent_->RecordStep(next, now);
  if (agent_->recording()) {
    const uint64_t allocated = device_memory ? device_memory->allocated : memory_.ResidentBytes();
    const uint64_t peak = device_memory ? device_memory->peak : memory_.PeakResidentBytes();
    agent_->RecordCounter(memory_allocated_name_, allocated, now);
    agent_->RecordCounter(memory_peak_name_, peak, now);
    if (device_memory) agent_->RecordCounter(memory_reserved_name_, device_memory->reserved, now);
    const int64_t stage = stage_.load(std::memory_order_relaxed);
    if (stage >= 0) agent_->RecordCounter(stage_name_, static_cast<uint64_t>(stage), now);
  }
  last_boundary_ns_ = now;

  // Shape capture follows the step: on for one step in shapes_every_n_steps.
  if (options_.shapes && options_.shapes_every_n_steps > 1) {
    const bool want = next % options_.shapes_every_n_steps == 0;
    if (want != shapes_this_step_.load(std::memory_order_relaxed)) {
      shapes_this_step_.store(want, std::memory_order_relaxed);
      SyncHook();
    }
  }

  Boundary boundary;
  boundary.step = next;
  if (agent_->halt_requested() && !halt_reported_) [[unlikely]] {
    const std::optional<agent::HaltInfo> info = agent_->halt_info();
    const uint64_t halt_at = info.has_value() ? info->halt_at_step : 0;
    if (next >= halt_at) {
      halt_reported_ = true;
      boundary.halt = true;
      boundary.reason = info.has_value() ? info->reason : std::string();
    }
  }
  return boundary;
}

void PluginSession::SetStage(uint64_t stage) {
  stage_.store(static_cast<int64_t>(std::min<uint64_t>(stage, INT64_MAX)),
               std::memory_order_relaxed);
  agent_->RecordCounter(stage_name_, stage, agent::Agent::Now());
}

std::optional<uint64_t> PluginSession::stage() const {
  const int64_t stage = stage_.load(std::memory_order_relaxed);
  if (stage < 0) return std::nullopt;
  return static_cast<uint64_t>(stage);
}

void PluginSession::RecordPhase(agent::Phase phase, int64_t start_ns, int64_t end_ns) {
  explicit_phases_ = true;
  agent_->RecordPhase(phase, running_step_.load(std::memory_order_relaxed), start_ns, end_ns);
}

agent::AgentStats PluginSession::stats() const {
  {
    base::MutexLock lock(&stats_mu_);
    if (final_stats_.has_value()) return *final_stats_;
  }
  return agent_->stats();
}

void PluginSession::Close(absl::Duration deadline, std::string error) {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  {
    base::MutexLock lock(&hook_mu_);
    hook_.reset();  // no callback starts after this
  }
  {
    base::MutexLock lock(&control_mu_);
    stop_control_ = true;
  }
  control_cv_.SignalAll();
  if (control_thread_.joinable()) control_thread_.join();
  watchdog_.Disarm();
  if (agent_ == nullptr) return;  // Start failed before the agent ran
  agent_->Shutdown(deadline, std::move(error));
  base::MutexLock lock(&stats_mu_);
  final_stats_ = agent_->stats();
}

}  // namespace trainscope::pytorch

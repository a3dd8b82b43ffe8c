// The trainscope agent: records events from a training process and streams
// them to the collector.
//
// Usage:
//   AgentOptions options;
//   options.job_id = "resnet"; options.rank = 3; options.world_size = 8;
//   absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Start(options);
//   StringId conv = (*agent)->Intern("aten::conv2d");   // cold: cache the id
//   int64_t t0 = Agent::Now();  ...;
//   (*agent)->RecordOperator(conv, t0, Agent::Now(), seq, OperatorScope::kForward);
//   if ((*agent)->halt_requested()) { ... }
//   (*agent)->Shutdown(absl::Seconds(5));               // or let the destructor do it
//
// Threading: every method may be called from any thread. Record* never locks,
// allocates (except a thread's first record, which makes its ring) or makes a
// system call; while dormant it is one relaxed load and a branch. Records are
// dropped and counted (never waited for) when buffers are full. Intern takes
// a mutex. Shutdown is idempotent and bounded by its deadline. Several Agents
// may live in one process; a thread may record into several of them.
#ifndef TRAINSCOPE_AGENT_AGENT_H_
#define TRAINSCOPE_AGENT_AGENT_H_

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/agent/agent_options.h"
#include "trainscope/agent/agent_stats.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/base/mutex.h"

struct trainscope_raw_ring;  // trainscope_agent.h

namespace trainscope::v1 {
class LossReport;
}  // namespace trainscope::v1

namespace trainscope::agent {

class GpuActivity;
class GpuEventQueue;
class RingRegistry;
class StringTable;
class Sender;
class ThreadRing;
class Transport;

class Agent {
 public:
  // Validates `options` (the error names the field) and starts the sender
  // thread. Never waits for the collector.
  static absl::StatusOr<std::unique_ptr<Agent>> Start(AgentOptions options);

  // Like Start, with a transport other than gRPC (tests).
  static absl::StatusOr<std::unique_ptr<Agent>> StartWithTransport(
      AgentOptions options, std::unique_ptr<Transport> transport);

  // Shutdown(options().shutdown_deadline).
  ~Agent();

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // The primary clock: CLOCK_MONOTONIC in nanoseconds.
  static int64_t Now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }

  // Interns `text` (truncated to kMaxStringBytes, invalid UTF-8 replaced by
  // '?'). Thread-safe, takes a mutex: call once per distinct string and keep
  // the id. "" is 0.
  StringId Intern(std::string_view text);
  static constexpr size_t kMaxStringBytes = 512;

  // The hot path. Each returns true when the agent was recording, i.e. the
  // call counts in the accounting of agent_stats.h (recorded, dropped or
  // sampled out), false when dormant or shut down.
  bool Record(const EventRecord& record) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(record);
  }
  bool RecordOperator(StringId name, int64_t start_ns, int64_t end_ns, uint64_t sequence = 0,
                      OperatorScope scope = OperatorScope::kUnspecified) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(MakeRecord(EventKind::kOperator, name, start_ns, end_ns, sequence,
                           static_cast<uint16_t>(scope)));
  }
  bool RecordOperatorBegin(StringId name, int64_t start_ns, uint64_t sequence = 0,
                           OperatorScope scope = OperatorScope::kUnspecified) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(MakeRecord(EventKind::kOperatorBegin, name, start_ns, start_ns, sequence,
                           static_cast<uint16_t>(scope)));
  }
  bool RecordOperatorEnd(StringId name, int64_t end_ns, uint64_t sequence = 0,
                         OperatorScope scope = OperatorScope::kUnspecified) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(MakeRecord(EventKind::kOperatorEnd, name, end_ns, end_ns, sequence,
                           static_cast<uint16_t>(scope)));
  }
  bool RecordCollective(StringId name, CollectiveKind kind, StringId group, uint64_t group_sequence,
                        uint64_t bytes, int32_t peer, int64_t start_ns, int64_t end_ns) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    EventRecord record = MakeRecord(EventKind::kCollective, name, start_ns, end_ns, bytes,
                                    static_cast<uint16_t>(kind));
    record.group = group;
    record.aux = group_sequence;
    record.peer = peer;
    return Push(record);
  }
  bool RecordStep(uint64_t step, int64_t time_ns) {
    if (gpu_ != nullptr) GpuStepBoundary();  // the step's device work is drained soon
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(MakeRecord(EventKind::kStepMark, kEmptyString, time_ns, time_ns, step, 0));
  }
  bool RecordPhase(Phase phase, uint64_t step, int64_t start_ns, int64_t end_ns) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(MakeRecord(EventKind::kPhaseMark, kEmptyString, start_ns, end_ns, step,
                           static_cast<uint16_t>(phase)));
  }
  bool RecordCounter(StringId name, uint64_t value, int64_t time_ns) {
    if (!recording_.load(std::memory_order_relaxed)) return false;
    return Push(MakeRecord(EventKind::kCounter, name, time_ns, time_ns, value, 0));
  }

  // GPU activity (AgentOptions::gpu_activity; see agent/src/gpu/). Each is a
  // no-op while it is off or cannot run here (stats().gpu_activity says).
  // Around each operator, on the thread that runs it (nesting allowed; each
  // Begin needs its End on that thread): the kernels, copies and memsets it
  // launches name it as their launching operator. `sequence` as in
  // RecordOperator. Costs a CUPTI call (a per-thread push) while active.
  void GpuOperatorBegin(StringId name, uint64_t sequence);
  void GpuOperatorEnd();
  // Around the launch of a collective on CUDA tensors: its NCCL kernels
  // become GPU collective events with this group, sequence and bytes.
  void GpuCollectiveBegin(StringId name, CollectiveKind kind, StringId group,
                          uint64_t group_sequence, uint64_t bytes, int32_t peer);
  void GpuCollectiveEnd();
  // Drains CUPTI's buffers soon (RecordStep calls it; it never waits) and,
  // when another CUPTI client held CUPTI, tries to take it back.
  void GpuStepBoundary();
  // Lets CUPTI go for another client (e.g. before torch.profiler starts)
  // until ResumeGpuActivity.
  void YieldGpuActivity();
  void ResumeGpuActivity();

  // A loss-contribution report (loss.proto), sent with the next batch.
  // Cold path (every K iterations): takes the sender's inbox mutex, never
  // waits for the network. False, counted as loss_reports_dropped, when more
  // than kMaxPendingLossReportBytes are waiting or after Shutdown started.
  // Sent whether or not the agent is recording operators.
  bool SubmitLossReport(v1::LossReport report);
  static constexpr size_t kMaxPendingLossReportBytes = 8 << 20;

  // The calling thread's ring for raw operator records (trainscope_agent.h's
  // trainscope_raw_ring_push_operator: a hook compiled apart writes it without
  // a call, with ticks of options().tick_mapper's clock); made on first use
  // like Record's. Null when the thread has none (it is exiting, or out of
  // memory). Valid on this thread until the thread exits or the Agent is
  // destroyed, whichever comes first; it follows SetRecording and
  // SetSamplingPeriod (trainscope_raw_ring_accepts).
  const trainscope_raw_ring* LocalRawRing();

  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // Turns recording on or off locally (the collector can too, by SetRecording).
  // Ignored after Shutdown started.
  void SetRecording(bool enabled);
  // Record one in `period` operator events (0 or 1: all). The collector sets it too.
  void SetSamplingPeriod(uint32_t period);

  // The collector's loss-contribution switch (SetLossContribution, or a
  // HelloAck's when it differs), for the plugin to follow; nullopt until one
  // arrives. `serial` counts the switches, so that a quick off-on between two
  // polls still reads as a change. Polled by the training thread: one relaxed load.
  struct LossContributionSwitch {
    bool enabled = false;
    uint64_t serial = 0;  // 1, 2, ...
  };
  std::optional<LossContributionSwitch> loss_contribution_switch() const {
    const uint64_t v = loss_contribution_switch_.load(std::memory_order_relaxed);
    if (v == 0) return std::nullopt;
    return LossContributionSwitch{(v & 1) != 0, v >> 1};
  }

  // True once the collector asked the job to halt.
  bool halt_requested() const { return halt_requested_.load(std::memory_order_relaxed); }
  std::optional<HaltInfo> halt_info() const;

  AgentStats stats() const;

  // Stops recording, sends what is buffered and waits for acknowledgements
  // until `deadline` has passed, says Goodbye and closes the stream. What is
  // still unacknowledged then counts as dropped_shutdown. Idempotent; a second
  // call returns at once. `error`: why the process ends abnormally (an
  // uncaught exception), sent in Goodbye.error; empty for a normal end.
  void Shutdown(absl::Duration deadline, std::string error = {});
  void Shutdown() { Shutdown(options_.shutdown_deadline); }

  const AgentOptions& options() const { return options_; }
  // Random per Agent, sent in Hello.agent_instance_id.
  uint64_t instance_id() const { return instance_id_; }
  // The job token the agent presents (the collector's, once it generated one).
  std::string job_token() const;

 private:
  Agent(AgentOptions options, std::unique_ptr<Transport> transport);

  static EventRecord MakeRecord(EventKind kind, StringId name, int64_t start_ns, int64_t end_ns,
                                uint64_t value, uint16_t detail) {
    EventRecord record;
    record.start_ns = start_ns;
    record.end_ns = end_ns;
    record.value = value;
    record.name = name;
    record.kind = kind;
    record.detail = detail;
    return record;
  }

  // Out of line so the ring layout stays private; costs one direct call.
  bool Push(const EventRecord& record);
  ThreadRing* LocalRingSlow();

  void ApplyRecordingFromCollector(bool enabled, uint32_t sampling_period);
  // Called by the sender's reader thread only (the switch's one writer).
  void ApplyLossContributionFromCollector(bool enabled, bool only_if_changed);
  void ApplyHalt(HaltInfo info);
  // Loads CUPTI and starts the tracer (AgentOptions::gpu_activity), or says why not.
  void StartGpuActivity();

  // Hot, read by every Record: kept together at the front.
  std::atomic<bool> recording_{false};
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint32_t> sampling_period_{1};
  std::atomic<bool> halt_requested_{false};
  const uint64_t serial_;  // unique per Agent in this process; keys the thread-local cache
  std::atomic<uint64_t> orphan_drops_{0};  // records of threads past their TLS teardown
  std::atomic<uint64_t> loss_contribution_switch_{0};  // serial << 1 | enabled; 0: none yet

  AgentOptions options_;
  uint64_t instance_id_;
  mutable base::Mutex halt_mu_;
  std::optional<HaltInfo> halt_info_ ABSL_GUARDED_BY(halt_mu_);
  std::unique_ptr<StringTable> strings_;
  std::unique_ptr<RingRegistry> rings_;
  std::unique_ptr<GpuEventQueue> gpu_events_;  // outlives sender_ and gpu_
  std::unique_ptr<Sender> sender_;
  std::unique_ptr<GpuActivity> gpu_;  // null: GPU activity off or unavailable
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_AGENT_H_

// The C API (trainscope_agent.h) over trainscope::agent::Agent. Every entry
// point catches everything: an exception must never unwind into C or Python.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "trainscope/agent/agent.h"
#include "trainscope/agent/c_agent_options.h"
#include "trainscope_agent.h"

using trainscope::agent::Agent;
using trainscope::agent::AgentOptions;
using trainscope::agent::CollectiveKind;
using trainscope::agent::OperatorScope;
using trainscope::agent::Phase;

struct trainscope_agent {
  std::unique_ptr<Agent> agent;
};

namespace {

void CopyOut(const std::string& text, char* out, size_t out_len) {
  if (out == nullptr || out_len == 0) return;
  const size_t n = std::min(text.size(), out_len - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

std::string Text(const char* text, const char* fallback = "") {
  return text != nullptr ? std::string(text) : std::string(fallback);
}

absl::Duration Millis(uint32_t ms) { return absl::Milliseconds(static_cast<int64_t>(ms)); }

}  // namespace

namespace trainscope::agent {

static_assert(TRAINSCOPE_GPU_OFF == static_cast<int>(GpuActivityState::kOff));
static_assert(TRAINSCOPE_GPU_UNAVAILABLE == static_cast<int>(GpuActivityState::kUnavailable));
static_assert(TRAINSCOPE_GPU_ACTIVE == static_cast<int>(GpuActivityState::kActive));
static_assert(TRAINSCOPE_GPU_YIELDED == static_cast<int>(GpuActivityState::kYielded));

AgentOptions AgentOptionsFromC(const trainscope_agent_options& options) {
  AgentOptions o;
  o.collector_address = Text(options.collector_address, "127.0.0.1:7070");
  o.job_id = Text(options.job_id);
  o.run_id = Text(options.run_id);
  o.job_token = Text(options.job_token);
  o.rank = options.rank;
  o.world_size = options.world_size;
  o.local_rank = options.local_rank;
  o.restart_count = options.restart_count;
  o.host = Text(options.host);
  o.rack = Text(options.rack);
  o.device = Text(options.device, "cpu");
  o.framework = Text(options.framework);
  o.framework_version = Text(options.framework_version);
  o.start_recording = options.start_recording != 0;
  o.memory_budget_bytes = options.memory_budget_bytes;
  o.ring_capacity_events = options.ring_capacity_events;
  o.max_batch_events = options.max_batch_events;
  o.flush_interval = Millis(options.flush_interval_ms);
  o.reconnect_min = Millis(options.reconnect_min_ms);
  o.reconnect_max = Millis(options.reconnect_max_ms);
  o.hello_timeout = Millis(options.hello_timeout_ms);
  o.shutdown_deadline = Millis(options.shutdown_deadline_ms);
  o.log_to_stderr = options.log_to_stderr != 0;
  if (options.on_halt != nullptr) {
    const trainscope_halt_callback callback = options.on_halt;
    void* const user_data = options.on_halt_user_data;
    o.on_halt = [callback, user_data](const trainscope::agent::HaltInfo& info) {
      callback(user_data, info.halt_id, info.reason.c_str(), info.requested_by.c_str());
    };
  }
  for (size_t i = 0; options.halt_when != nullptr && i < options.halt_when_count; ++i) {
    o.halt_when.push_back(Text(options.halt_when[i]));
  }
  o.halt_below_efficiency = options.halt_below_efficiency;
  o.halt_for_steps = options.halt_for_steps;
  o.test_clock_offset_ns = options.test_clock_offset_ns;
  o.test_clock_drift_ppm = options.test_clock_drift_ppm;
  o.test_clock_origin_ns = options.test_clock_origin_ns;
  o.gpu_activity = options.gpu_activity != 0;
  o.cupti_library = Text(options.cupti_library);
  return o;
}

void AgentStatsToC(const AgentStats& s, struct trainscope_agent_stats* stats) {
  std::memset(stats, 0, sizeof(*stats));
  stats->events_recorded = s.events_recorded;
  stats->dropped_ring_full = s.dropped_ring_full;
  stats->dropped_buffer_full = s.dropped_buffer_full;
  stats->dropped_shutdown = s.dropped_shutdown;
  stats->events_sampled_out = s.events_sampled_out;
  stats->events_refused = s.events_refused;
  stats->events_acked = s.events_acked;
  stats->batches_sent = s.batches_sent;
  stats->batches_acked = s.batches_acked;
  stats->reconnects = s.reconnects;
  stats->loss_reports_submitted = s.loss_reports_submitted;
  stats->loss_reports_dropped = s.loss_reports_dropped;
  stats->gpu_activity = static_cast<uint32_t>(s.gpu_activity);
  stats->gpu_records_lost = s.gpu_records_lost;
  stats->gpu_buffers_refused = s.gpu_buffers_refused;
  stats->gpu_events_unresolved = s.gpu_events_unresolved;
  stats->gpu_events_out_of_order = s.gpu_events_out_of_order;
  stats->connected = s.connected ? 1 : 0;
  stats->recording = s.recording ? 1 : 0;
  stats->halt_requested = s.halt_requested ? 1 : 0;
}

}  // namespace trainscope::agent

extern "C" {

void trainscope_agent_options_init(trainscope_agent_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  const AgentOptions defaults;
  options->collector_address = "127.0.0.1:7070";
  options->world_size = defaults.world_size;
  options->device = "cpu";
  options->start_recording = defaults.start_recording ? 1 : 0;
  options->memory_budget_bytes = defaults.memory_budget_bytes;
  options->ring_capacity_events = defaults.ring_capacity_events;
  options->max_batch_events = defaults.max_batch_events;
  options->flush_interval_ms =
      static_cast<uint32_t>(absl::ToInt64Milliseconds(defaults.flush_interval));
  options->reconnect_min_ms =
      static_cast<uint32_t>(absl::ToInt64Milliseconds(defaults.reconnect_min));
  options->reconnect_max_ms =
      static_cast<uint32_t>(absl::ToInt64Milliseconds(defaults.reconnect_max));
  options->hello_timeout_ms =
      static_cast<uint32_t>(absl::ToInt64Milliseconds(defaults.hello_timeout));
  options->shutdown_deadline_ms =
      static_cast<uint32_t>(absl::ToInt64Milliseconds(defaults.shutdown_deadline));
  options->log_to_stderr = 1;
}

int trainscope_agent_start(const trainscope_agent_options* options, trainscope_agent** out,
                           char* error, size_t error_len) {
  try {
    if (out != nullptr) *out = nullptr;
    if (options == nullptr || out == nullptr) {
      CopyOut("options and out: expected non-NULL pointers", error, error_len);
      return 1;
    }
    AgentOptions o = trainscope::agent::AgentOptionsFromC(*options);
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Start(std::move(o));
    if (!agent.ok()) {
      CopyOut(std::string(agent.status().message()), error, error_len);
      return 1;
    }
    *out = new trainscope_agent{*std::move(agent)};
    CopyOut("", error, error_len);
    return 0;
  } catch (const std::exception& e) {
    CopyOut(std::string("trainscope_agent_start failed: ") + e.what(), error, error_len);
  } catch (...) {
    CopyOut("trainscope_agent_start failed: unknown exception", error, error_len);
  }
  return 1;
}

void trainscope_agent_shutdown(trainscope_agent* agent, int timeout_ms) {
  if (agent == nullptr) return;
  try {
    if (timeout_ms >= 0) agent->agent->Shutdown(absl::Milliseconds(timeout_ms));
    delete agent;
  } catch (...) {
  }
}

int64_t trainscope_now_ns(void) { return Agent::Now(); }

uint32_t trainscope_intern(trainscope_agent* agent, const char* text) {
  if (agent == nullptr || text == nullptr) return 0;
  try {
    return agent->agent->Intern(text);
  } catch (...) {
    return 0;
  }
}

uint32_t trainscope_intern_n(trainscope_agent* agent, const char* text, size_t length) {
  if (agent == nullptr || text == nullptr) return 0;
  try {
    return agent->agent->Intern(std::string_view(text, length));
  } catch (...) {
    return 0;
  }
}

// The record functions cannot throw (no allocation but the first ring, which
// is caught inside); noexcept wrappers keep it so.
int trainscope_record_operator(trainscope_agent* agent, uint32_t name, int64_t start_ns,
                               int64_t end_ns, uint64_t sequence, uint32_t scope) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordOperator(name, start_ns, end_ns, sequence,
                                      static_cast<OperatorScope>(scope));
}

int trainscope_record_operator_begin(trainscope_agent* agent, uint32_t name, int64_t start_ns,
                                     uint64_t sequence, uint32_t scope) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordOperatorBegin(name, start_ns, sequence,
                                           static_cast<OperatorScope>(scope));
}

int trainscope_record_operator_end(trainscope_agent* agent, uint32_t name, int64_t end_ns,
                                   uint64_t sequence, uint32_t scope) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordOperatorEnd(name, end_ns, sequence, static_cast<OperatorScope>(scope));
}

int trainscope_record_collective(trainscope_agent* agent, uint32_t name, uint32_t kind,
                                 uint32_t group, uint64_t group_sequence, uint64_t bytes,
                                 int32_t peer, int64_t start_ns, int64_t end_ns) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordCollective(name, static_cast<CollectiveKind>(kind), group,
                                        group_sequence, bytes, peer, start_ns, end_ns);
}

int trainscope_record_step(trainscope_agent* agent, uint64_t step, int64_t time_ns) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordStep(step, time_ns);
}

int trainscope_record_phase(trainscope_agent* agent, uint32_t phase, uint64_t step,
                            int64_t start_ns, int64_t end_ns) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordPhase(static_cast<Phase>(phase), step, start_ns, end_ns);
}

int trainscope_record_counter(trainscope_agent* agent, uint32_t name, uint64_t value,
                              int64_t time_ns) {
  if (agent == nullptr) return 0;
  return agent->agent->RecordCounter(name, value, time_ns);
}

int trainscope_is_recording(const trainscope_agent* agent) {
  return agent != nullptr && agent->agent->recording() ? 1 : 0;
}

void trainscope_set_recording(trainscope_agent* agent, int enabled) {
  if (agent == nullptr) return;
  agent->agent->SetRecording(enabled != 0);
}

int trainscope_halt_requested(const trainscope_agent* agent, char* reason, size_t reason_len) {
  if (agent == nullptr || !agent->agent->halt_requested()) return 0;
  try {
    const std::optional<trainscope::agent::HaltInfo> info = agent->agent->halt_info();
    CopyOut(info.has_value() ? info->reason : std::string(), reason, reason_len);
  } catch (...) {
    CopyOut("", reason, reason_len);
  }
  return 1;
}

uint64_t trainscope_halt_at_step(const trainscope_agent* agent) {
  if (agent == nullptr || !agent->agent->halt_requested()) return 0;
  try {
    const std::optional<trainscope::agent::HaltInfo> info = agent->agent->halt_info();
    return info.has_value() ? info->halt_at_step : 0;
  } catch (...) {
    return 0;
  }
}

void trainscope_agent_stats(const trainscope_agent* agent, struct trainscope_agent_stats* stats) {
  if (stats == nullptr) return;
  std::memset(stats, 0, sizeof(*stats));
  if (agent == nullptr) return;
  try {
    trainscope::agent::AgentStatsToC(agent->agent->stats(), stats);
  } catch (...) {
  }
}

}  // extern "C"

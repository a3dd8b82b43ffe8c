// A snapshot of an Agent's counters (Agent::stats()).
//
// Accounting, exact after Shutdown (tests check it):
//   Record* calls that returned true == events_recorded + dropped_ring_full
//                                       + events_sampled_out
//   events_recorded == events_acked + events_refused + dropped_buffer_full
//                      + dropped_shutdown
#ifndef TRAINSCOPE_AGENT_AGENT_STATS_H_
#define TRAINSCOPE_AGENT_AGENT_STATS_H_

#include <cstdint>
#include <string>

namespace trainscope::agent {

// Where GPU activity recording (AgentOptions::gpu_activity) stands.
enum class GpuActivityState : uint8_t {
  kOff = 0,          // not asked for
  kUnavailable = 1,  // asked for, cannot run here (no CUPTI, no driver, built without CUPTI)
  kActive = 2,       // recording kernels, copies, memsets, syncs and launches
  kYielded = 3,      // another CUPTI client holds it (torch.profiler, Nsight): retried
};

struct AgentStats {
  uint64_t events_recorded = 0;      // accepted into a ring
  uint64_t dropped_ring_full = 0;    // ring full, or no ring could be made for the thread
  uint64_t dropped_buffer_full = 0;  // drained but the send buffer was at its bound
  uint64_t dropped_shutdown = 0;     // unacknowledged when Shutdown's deadline passed
  uint64_t events_sampled_out = 0;   // operator events skipped by the sampling period
  uint64_t events_refused = 0;       // in batches the collector rejected
  uint64_t events_acked = 0;         // durable at the collector
  uint64_t batches_sent = 0;         // successful stream writes, resends included
  uint64_t batches_acked = 0;
  uint64_t reconnects = 0;              // streams re-established after one was lost
  uint64_t loss_reports_submitted = 0;  // SubmitLossReport calls accepted
  uint64_t loss_reports_dropped = 0;    // refused: over the pending bound, or shut down
  // GPU activity. Its events count in events_recorded like ring records, a
  // full GPU event queue's in dropped_ring_full.
  GpuActivityState gpu_activity = GpuActivityState::kOff;
  // CUPTI had no buffer for them (pool at its bound), or a forced flush
  // handed them over before the device finished their work (no times).
  uint64_t gpu_records_lost = 0;
  uint64_t gpu_buffers_refused = 0;      // buffer requests refused by the bounded pool
  uint64_t gpu_events_unresolved = 0;    // device events sent without their launch
  uint64_t gpu_events_out_of_order = 0;  // dropped: would end before their stream's last event
  // The collector's last permanent refusal of the stream ("PERMISSION_DENIED:
  // job J: rank 0 presented no job secret; ..."): it will refuse the same
  // Hello again, so a caller that cannot change it (trainscope-loadgen) stops.
  // Empty once a stream is acknowledged.
  std::string refusal;
  bool connected = false;  // a stream is open and acknowledged by HelloAck
  bool recording = false;
  bool halt_requested = false;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_AGENT_STATS_H_

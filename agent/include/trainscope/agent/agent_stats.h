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

namespace trainscope::agent {

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
  uint64_t reconnects = 0;  // streams re-established after one was lost
  uint64_t loss_reports_submitted = 0;  // SubmitLossReport calls accepted
  uint64_t loss_reports_dropped = 0;    // refused: over the pending bound, or shut down
  bool connected = false;   // a stream is open and acknowledged by HelloAck
  bool recording = false;
  bool halt_requested = false;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_AGENT_STATS_H_

// The one rule for a job's state (status.proto JobState), used by the live
// collector (AgentStreamTable::State) and by the front ends that open a
// stored log (the viewer, offline), so that one job never reads "halted"
// live and "finished" from its log: halted wins once a halt was issued;
// otherwise running while a rank is connected, finished once every rank said
// goodbye cleanly, lost when none is connected and one ended without goodbye
// (or with an error), idle otherwise.
//
// Usage:
//   v1::JobState live = DecideJobState({.halted = runner.halted(), ...});
//   v1::JobState stored = StoredJobState(log_state);  // JobLog::state() or FoldLogRecord
//
// Threading: plain functions.
#ifndef TRAINSCOPE_COLLECTOR_STORE_JOB_STATE_RULE_H_
#define TRAINSCOPE_COLLECTOR_STORE_JOB_STATE_RULE_H_

#include <cstdint>

#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

// What the state follows from.
struct JobStateFacts {
  bool halted = false;      // a halt command was issued (it is in the log)
  uint32_t ranks_seen = 0;  // ranks that ever said hello
  uint32_t connected = 0;   // ranks with a live stream now
  uint32_t goodbyes = 0;    // ranks whose latest stream said goodbye
  uint32_t vanished = 0;    // ranks whose latest stream ended abnormally
};

trainscope::v1::JobState DecideJobState(const JobStateFacts& facts);

// A stream that ended without goodbye, or with an error said: its rank
// counts as vanished for the job's state.
bool StreamEndedAbnormally(const StreamProgress& progress);

// The state of a stored job with no collector holding it (every stream
// closed or cut): the facts of each rank's latest incarnation (highest
// restart count) and the log's commands; what a restarted collector would
// report before any rank reconnects.
trainscope::v1::JobState StoredJobState(const JobLogState& state);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_JOB_STATE_RULE_H_

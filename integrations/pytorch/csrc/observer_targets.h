// What the RecordFunction callbacks record into: one session's agent and the
// helpers around it. Plain data; the session owns every pointee and keeps
// them alive after it unpublishes the targets (see PluginSession::Close).
//
// Threading: immutable once published; the pointees state their own rules.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_OBSERVER_TARGETS_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_OBSERVER_TARGETS_H_

#include <atomic>
#include <cstdint>

#include "clock.h"
#include "collective_tracker.h"
#include "op_name_table.h"
#include "step_phase_tracker.h"
#include "trainscope/agent/agent.h"

namespace trainscope::pytorch {

struct ObserverTargets {
  // Unique per session in this process: per-thread caches filled for another
  // session are recognised by it and dropped.
  uint64_t generation = 0;
  agent::Agent* agent = nullptr;
  const TickClock* clock = nullptr;
  OpNameTable* names = nullptr;
  CollectiveTracker* collectives = nullptr;
  StepPhaseTracker* phases = nullptr;
  const std::atomic<uint64_t>* running_step = nullptr;  // the step now running
  agent::StringId flops_name = agent::kEmptyString;     // the "flops" counter
  bool gpu_requested = false;  // AgentOptions::gpu_activity: bracket operators for CUPTI
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_OBSERVER_TARGETS_H_

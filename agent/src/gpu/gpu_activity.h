// What the Agent asks of a GPU activity recorder, free of any CUDA type, so
// the agent compiles and runs the same with or without CUPTI
// (GpuActivityTracer is the CUPTI implementation).
//
// Usage (by Agent; see Agent::GpuOperatorBegin and friends):
//   std::unique_ptr<GpuActivity> gpu = ...;
//   training thread: gpu->OperatorBegin(name, seq); ... gpu->OperatorEnd();
//   step mark:       gpu->StepBoundary();
//   shutdown:        gpu->Stop();
//
// Threading: every method may be called from any thread.
#ifndef TRAINSCOPE_AGENT_SRC_GPU_GPU_ACTIVITY_H_
#define TRAINSCOPE_AGENT_SRC_GPU_GPU_ACTIVITY_H_

#include <cstdint>

#include "gpu/collective_launch_table.h"
#include "trainscope/agent/agent_stats.h"
#include "trainscope/agent/event_record.h"

namespace trainscope::agent {

class GpuActivity {
 public:
  struct Counters {
    GpuActivityState state = GpuActivityState::kOff;
    uint64_t records_lost = 0;
    uint64_t buffers_refused = 0;
    uint64_t unresolved = 0;
    uint64_t out_of_order = 0;
  };

  virtual ~GpuActivity() = default;

  // Around each operator on the thread that runs it (nesting allowed): the
  // device work it launches is attributed to it.
  virtual void OperatorBegin(StringId name, uint64_t sequence) = 0;
  virtual void OperatorEnd() = 0;
  // Around the launch of a collective on the launching thread: its NCCL
  // kernels get its group, sequence and bytes. Collectives do not nest: a
  // begin first closes a level its thread still has open (a range that ended
  // on another thread never called CollectiveEnd here).
  virtual void CollectiveBegin(const GpuCollectiveLaunch& launch) = 0;
  virtual void CollectiveEnd() = 0;
  // At each step mark: drains CUPTI's buffers soon (without waiting for it)
  // and, when yielded, tries to take CUPTI back.
  virtual void StepBoundary() = 0;
  // Hands CUPTI to another client (e.g. torch.profiler starts) until Resume.
  virtual void Yield() = 0;
  virtual void Resume() = 0;
  // Drains everything and lets CUPTI go. Idempotent.
  virtual void Stop() = 0;
  virtual Counters counters() const = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_GPU_ACTIVITY_H_

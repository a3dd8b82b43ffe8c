// The event mix one loadgen producer thread records, shaped like a training
// step of a small CNN.
//
// Usage:
//   Workload workload(agent, Workload::Role::kMain);
//   while (...) attempted += workload.Next();
//
// The main thread of a stream cycles through 50 calls per step: a step mark,
// forward operators ("aten::conv2d", "aten::relu", ...), backward operators,
// forward and backward phase marks, an all_reduce on "default_pg" (group
// sequence = step, 4 MiB), a memory counter and an optimizer operator. Helper
// threads record operators only. Timestamps are real (Agent::Now()).
//
// Threading: one Workload per producer thread.
#ifndef TRAINSCOPE_BENCH_LOADGEN_WORKLOAD_H_
#define TRAINSCOPE_BENCH_LOADGEN_WORKLOAD_H_

#include <cstdint>
#include <vector>

#include "trainscope/agent/agent.h"

namespace trainscope::loadgen {

class Workload {
 public:
  enum class Role { kMain, kHelper };
  static constexpr int kCallsPerStep = 50;

  Workload(agent::Agent* agent, Role role);

  // Makes one Record call; returns whether the agent was recording.
  bool Next();

 private:
  bool NextMain();
  bool NextOperator(agent::OperatorScope scope, int64_t now);

  agent::Agent* const agent_;
  const Role role_;
  std::vector<agent::StringId> forward_ops_;
  std::vector<agent::StringId> backward_ops_;
  agent::StringId optimizer_op_;
  agent::StringId all_reduce_;
  agent::StringId default_pg_;
  agent::StringId memory_counter_;
  uint64_t step_ = 1;
  int position_ = 0;  // call within the step
  uint64_t op_sequence_ = 0;
  size_t op_index_ = 0;
  int64_t last_ns_;
  int64_t forward_start_ns_ = 0;
  int64_t backward_start_ns_ = 0;
};

}  // namespace trainscope::loadgen

#endif  // TRAINSCOPE_BENCH_LOADGEN_WORKLOAD_H_

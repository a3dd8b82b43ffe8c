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
// With DistinctNames (--distinct-names), the operators take their names from
// "op_<i>" instead of the fixed list: this producer's share of the names,
// i = first, first + stride, ... (count of them), cycled, each interned on
// first use, so that the producers of one job together send every name once
// per cycle.
//
// Threading: one Workload per producer thread.
#ifndef TRAINSCOPE_BENCH_LOADGEN_WORKLOAD_H_
#define TRAINSCOPE_BENCH_LOADGEN_WORKLOAD_H_

#include <cstdint>
#include <vector>

#include "trainscope/agent/agent.h"

namespace trainscope::loadgen {

// One producer's share of --distinct-names: names op_<first + k * stride>,
// k < count. count 0: the fixed list.
struct DistinctNames {
  uint64_t first = 0;
  uint64_t stride = 1;
  uint64_t count = 0;
};

class Workload {
 public:
  enum class Role { kMain, kHelper };
  static constexpr int kCallsPerStep = 50;

  Workload(agent::Agent* agent, Role role, DistinctNames distinct = {});

  // Makes one Record call; returns whether the agent was recording.
  bool Next();

  // Distinct names interned so far.
  uint64_t names_interned() const { return distinct_ids_.size(); }
  // Those of them the agent's string table had no room for: past its cap
  // every new string gets the one "(string table full)" id, so a probe string
  // interned now gets that id exactly when this producer's overflowing names
  // did (the table only fills up). Call once, after the last Next().
  uint64_t CountNamesOverAgentCap() const;

 private:
  bool NextMain();
  bool NextOperator(agent::OperatorScope scope, int64_t now);
  agent::StringId NextDistinctName();

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
  const DistinctNames distinct_;
  std::vector<agent::StringId> distinct_ids_;  // interned so far, in order
  uint64_t distinct_index_ = 0;
};

}  // namespace trainscope::loadgen

#endif  // TRAINSCOPE_BENCH_LOADGEN_WORKLOAD_H_

#include "workload.h"

#include "absl/strings/str_cat.h"

namespace trainscope::loadgen {

using agent::Agent;
using agent::OperatorScope;

namespace {
// Positions within a main thread's 50-call step.
constexpr int kForwardOps = 22;                   // positions 1..22
constexpr int kBackwardEnd = 45;                  // positions 23..44
constexpr int kForwardPhase = kBackwardEnd;       // 45
constexpr int kBackwardPhase = kBackwardEnd + 1;  // 46
constexpr int kAllReduce = kBackwardEnd + 2;      // 47
constexpr int kMemory = kBackwardEnd + 3;         // 48
constexpr int kOptimizer = kBackwardEnd + 4;      // 49
constexpr uint64_t kAllReduceBytes = 4 << 20;
}  // namespace

Workload::Workload(Agent* agent, Role role, DistinctNames distinct)
    : agent_(agent), role_(role), distinct_(distinct) {
  for (const char* name : {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::max_pool2d",
                           "aten::addmm", "aten::linear", "aten::add"}) {
    forward_ops_.push_back(agent->Intern(name));
  }
  for (const char* name :
       {"aten::addmm", "aten::relu", "aten::convolution_backward", "aten::threshold_backward",
        "aten::native_batch_norm_backward", "aten::conv2d"}) {
    backward_ops_.push_back(agent->Intern(name));
  }
  optimizer_op_ = agent->Intern("aten::add_");
  all_reduce_ = agent->Intern("c10d::allreduce_");
  default_pg_ = agent->Intern("default_pg");
  memory_counter_ = agent->Intern("memory_allocated");
  last_ns_ = Agent::Now();
}

bool Workload::Next() {
  if (role_ == Role::kHelper) {
    return NextOperator(++position_ % 2 ? OperatorScope::kForward : OperatorScope::kBackward,
                        Agent::Now());
  }
  const bool recording = NextMain();
  if (++position_ == kCallsPerStep) {
    position_ = 0;
    ++step_;
  }
  return recording;
}

agent::StringId Workload::NextDistinctName() {
  const uint64_t k = distinct_index_++ % distinct_.count;
  if (k < distinct_ids_.size()) return distinct_ids_[k];
  const agent::StringId id =
      agent_->Intern(absl::StrCat("op_", distinct_.first + k * distinct_.stride));
  distinct_ids_.push_back(id);
  return id;
}

uint64_t Workload::CountNamesOverAgentCap() const {
  if (distinct_ids_.empty()) return 0;
  // A name no producer sends: a fresh id unless the table is full.
  const agent::StringId probe = agent_->Intern("(trainscope-loadgen string table probe)");
  uint64_t over = 0;
  for (const agent::StringId id : distinct_ids_) over += id == probe;
  return over;
}

bool Workload::NextOperator(OperatorScope scope, int64_t now) {
  agent::StringId name;
  if (distinct_.count > 0) {
    name = NextDistinctName();
  } else {
    const std::vector<agent::StringId>& names =
        scope == OperatorScope::kBackward ? backward_ops_ : forward_ops_;
    name = names[op_index_++ % names.size()];
  }
  const bool recording = agent_->RecordOperator(name, last_ns_, now, op_sequence_++, scope);
  last_ns_ = now;
  return recording;
}

bool Workload::NextMain() {
  const int64_t now = Agent::Now();
  switch (position_) {
    case 0:
      forward_start_ns_ = now;
      last_ns_ = now;
      return agent_->RecordStep(step_, now);
    case kForwardPhase:
      return agent_->RecordPhase(agent::Phase::kForward, step_, forward_start_ns_,
                                 backward_start_ns_);
    case kBackwardPhase:
      return agent_->RecordPhase(agent::Phase::kBackward, step_, backward_start_ns_, now);
    case kAllReduce: {
      const bool recording =
          agent_->RecordCollective(all_reduce_, agent::CollectiveKind::kAllReduce, default_pg_,
                                   step_, kAllReduceBytes, -1, last_ns_, now);
      last_ns_ = now;
      return recording;
    }
    case kMemory:
      return agent_->RecordCounter(memory_counter_, (1ull << 30) + (step_ % 64) * (1 << 20), now);
    case kOptimizer: {
      const bool recording = agent_->RecordOperator(optimizer_op_, last_ns_, now, op_sequence_++,
                                                    OperatorScope::kUnspecified);
      last_ns_ = now;
      return recording;
    }
    default:
      if (position_ == kForwardOps + 1) backward_start_ns_ = now;
      return NextOperator(
          position_ <= kForwardOps ? OperatorScope::kForward : OperatorScope::kBackward, now);
  }
}

}  // namespace trainscope::loadgen

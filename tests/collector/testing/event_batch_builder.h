// Builds valid trainscope.v1.EventBatch messages event by event, the way the
// agent's sender encodes them (string table, start deltas, collective
// columns), for tests of what consumes batches.
//
// Usage:
//   EventBatchBuilder b(/*sequence=*/1);
//   b.Operator("aten::mm", 1000, 2000);
//   b.Collective("nccl:all_reduce", 3000, 4000, v1::COLLECTIVE_KIND_ALL_REDUCE, "", 7, 1024);
//   b.StepMark(5000, 1);
//   v1::EventBatch batch = b.Build();
//
// Threading: a plain value.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_TESTING_EVENT_BATCH_BUILDER_H_
#define TRAINSCOPE_TESTS_COLLECTOR_TESTING_EVENT_BATCH_BUILDER_H_

#include <cstdint>
#include <map>
#include <string>

#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector::testing {

class EventBatchBuilder {
 public:
  explicit EventBatchBuilder(uint64_t sequence) { batch_.set_sequence(sequence); }

  EventBatchBuilder& Operator(const std::string& name, int64_t start, int64_t end,
                              v1::OperatorScope scope = v1::OPERATOR_SCOPE_FORWARD,
                              uint64_t op_sequence = 0) {
    Add(v1::EVENT_KIND_OPERATOR, name, start, end, scope, op_sequence);
    return *this;
  }
  EventBatchBuilder& Collective(const std::string& name, int64_t start, int64_t end,
                                v1::CollectiveKind kind, const std::string& group,
                                uint64_t group_sequence, uint64_t bytes, int32_t peer = -1) {
    Add(v1::EVENT_KIND_COLLECTIVE, name, start, end, kind, bytes);
    batch_.add_group(Intern(group));
    batch_.add_group_sequence(group_sequence);
    batch_.add_peer(peer);
    return *this;
  }
  EventBatchBuilder& StepMark(int64_t at, uint64_t step) {
    Add(v1::EVENT_KIND_STEP_MARK, "", at, at, 0, step);
    return *this;
  }
  EventBatchBuilder& Phase(v1::Phase phase, int64_t start, int64_t end, uint64_t step) {
    Add(v1::EVENT_KIND_PHASE_MARK, "", start, end, phase, step);
    return *this;
  }
  EventBatchBuilder& Counter(const std::string& name, int64_t at, uint64_t value) {
    Add(v1::EVENT_KIND_COUNTER, name, at, at, 0, value);
    return *this;
  }

  v1::EventBatch Build() const { return batch_; }

 private:
  uint32_t Intern(const std::string& s) {
    auto [it, inserted] = strings_.emplace(s, static_cast<uint32_t>(batch_.strings_size()));
    if (inserted) batch_.add_strings(s);
    return it->second;
  }
  void Add(v1::EventKind kind, const std::string& name, int64_t start, int64_t end,
           uint32_t detail, uint64_t value) {
    if (batch_.kind_size() == 0) batch_.set_base_time_ns(start);
    batch_.add_kind(kind);
    batch_.add_start_delta_ns(start - (batch_.kind_size() == 1 ? start : last_start_));
    last_start_ = start;
    batch_.add_duration_ns(static_cast<uint64_t>(end - start));
    batch_.add_name(Intern(name));
    batch_.add_thread(1);
    batch_.add_detail(detail);
    batch_.add_value(value);
  }

  v1::EventBatch batch_;
  std::map<std::string, uint32_t> strings_;
  int64_t last_start_ = 0;
};

}  // namespace trainscope::collector::testing

#endif  // TRAINSCOPE_TESTS_COLLECTOR_TESTING_EVENT_BATCH_BUILDER_H_

#include "trainscope/collector/analysis/operator_batch_builder.h"

#include <string>

namespace trainscope::collector {

OperatorBatchBuilder::OperatorBatchBuilder(const JobStrings* strings,
                                           trainscope::v1::OperatorBatch* batch)
    : strings_(strings), batch_(batch) {}

uint32_t OperatorBatchBuilder::Intern(uint32_t id) {
  auto [it, inserted] = index_.try_emplace(id, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(batch_->strings_size());
    batch_->add_strings(std::string(strings_->Get(id)));
  }
  return it->second;
}

void OperatorBatchBuilder::Add(const OperatorRecord& op) {
  const uint32_t name = Intern(op.name);
  const uint32_t group = op.is_communication() ? Intern(op.group) : 0;
  trainscope::v1::AlignedOperator* out = batch_->add_operators();
  ToProto(op, name, group, out);
  if (op.is_gpu() && op.launch_op != 0) out->set_launch_op(Intern(op.launch_op));
}

void OperatorBatchBuilder::ToProto(const OperatorRecord& op, uint32_t name_index,
                                   uint32_t group_index, trainscope::v1::AlignedOperator* out) {
  out->set_rank(op.rank);
  out->set_start_ns(op.start_ns);
  out->set_end_ns(op.end_ns);
  out->set_raw_start_ns(op.raw_start_ns);
  out->set_raw_end_ns(op.raw_end_ns);
  out->set_name(name_index);
  out->set_op_class(op.op_class);
  out->set_step(op.step);
  out->set_stage(op.stage);
  out->set_scope(op.scope);
  out->set_thread(op.thread);
  out->set_op_sequence(op.op_sequence);
  if (op.is_communication()) {
    out->set_group(group_index);
    out->set_group_sequence(op.group_sequence);
    out->set_peer(op.peer);
    out->set_bytes(op.bytes);
    out->set_collective_kind(op.collective_kind);
  } else {
    out->set_peer(-1);
  }
  if (op.is_gpu()) {
    // Device work sits on a stream, never on a thread.
    out->set_thread(0);
    out->set_gpu_device(op.gpu_device);
    out->set_gpu_stream(op.gpu_stream);
    out->set_correlation(op.correlation);
  }
}

}  // namespace trainscope::collector

#include "batch_encoder.h"

#include <algorithm>

#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::agent {

namespace {

template <typename Field, typename T>
void CopyColumn(const std::vector<T>& column, Field* field) {
  field->Reserve(static_cast<int>(column.size()));
  field->Add(column.begin(), column.end());
}

}  // namespace

uint32_t BatchEncoder::BatchIndex(StringId id) {
  if (id == kEmptyString) return 0;
  if (id >= stamp_.size()) {
    const size_t size = std::max<size_t>(id + 1, stamp_.size() * 2);
    stamp_.resize(size, 0);
    index_of_.resize(size, 0);
  }
  if (stamp_[id] != generation_) {
    stamp_[id] = generation_;
    index_of_[id] = static_cast<uint32_t>(string_ids_.size());
    string_ids_.push_back(id);
  }
  return index_of_[id];
}

void BatchEncoder::Add(EventRecord record, uint32_t os_thread_id) {
  if (perturbation_.active()) [[unlikely]] {
    record.start_ns = perturbation_.Apply(record.start_ns);
    record.end_ns = perturbation_.Apply(record.end_ns);
  }
  if (kind_.empty()) base_time_ns_ = previous_start_ns_ = record.start_ns;
  const auto kind = static_cast<int>(record.kind);
  kind_.push_back(v1::EventKind_IsValid(kind) ? kind : v1::EVENT_KIND_UNSPECIFIED);
  // Wrapping arithmetic: absurd caller timestamps must not be undefined behaviour.
  start_delta_ns_.push_back(static_cast<int64_t>(static_cast<uint64_t>(record.start_ns) -
                                                 static_cast<uint64_t>(previous_start_ns_)));
  previous_start_ns_ = record.start_ns;
  duration_ns_.push_back(record.end_ns > record.start_ns
                             ? static_cast<uint64_t>(record.end_ns) -
                                   static_cast<uint64_t>(record.start_ns)
                             : 0);
  name_.push_back(BatchIndex(record.name));
  thread_.push_back(os_thread_id);
  detail_.push_back(record.detail);
  value_.push_back(record.value);
  if (protocol::IsCollectiveKind(kind)) {
    group_.push_back(BatchIndex(record.group));
    group_sequence_.push_back(record.aux);
    peer_.push_back(record.peer);
  }
}

void BatchEncoder::AddGpu(const GpuEventRecord& record) {
  const bool device_event = protocol::IsGpuKind(static_cast<int>(record.event.kind));
  Add(record.event, device_event ? 0 : record.thread);
  if (!device_event) return;
  gpu_device_.push_back(record.device);
  gpu_stream_.push_back(record.stream);
  gpu_correlation_.push_back(record.correlation);
  gpu_launch_delta_ns_.push_back(record.correlation != 0 ? std::min<int64_t>(record.launch_delta_ns, 0)
                                                         : 0);
  gpu_launch_op_.push_back(record.correlation != 0 ? BatchIndex(record.launch_op) : 0);
}

v1::EventBatch BatchEncoder::Finish(const StringTable& strings, const v1::DropCounters& drops) {
  v1::EventBatch batch;
  batch.set_base_time_ns(base_time_ns_);
  strings.CopyTo(string_ids_, batch.mutable_strings());
  CopyColumn(kind_, batch.mutable_kind());
  CopyColumn(start_delta_ns_, batch.mutable_start_delta_ns());
  CopyColumn(duration_ns_, batch.mutable_duration_ns());
  CopyColumn(name_, batch.mutable_name());
  CopyColumn(thread_, batch.mutable_thread());
  CopyColumn(detail_, batch.mutable_detail());
  CopyColumn(value_, batch.mutable_value());
  CopyColumn(group_, batch.mutable_group());
  CopyColumn(group_sequence_, batch.mutable_group_sequence());
  CopyColumn(peer_, batch.mutable_peer());
  CopyColumn(gpu_device_, batch.mutable_gpu_device());
  CopyColumn(gpu_stream_, batch.mutable_gpu_stream());
  CopyColumn(gpu_correlation_, batch.mutable_gpu_correlation());
  CopyColumn(gpu_launch_delta_ns_, batch.mutable_gpu_launch_delta_ns());
  CopyColumn(gpu_launch_op_, batch.mutable_gpu_launch_op());
  *batch.mutable_drops() = drops;
  Reset();
  return batch;
}

void BatchEncoder::Reset() {
  base_time_ns_ = previous_start_ns_ = 0;
  kind_.clear();
  start_delta_ns_.clear();
  duration_ns_.clear();
  name_.clear();
  thread_.clear();
  detail_.clear();
  value_.clear();
  group_.clear();
  group_sequence_.clear();
  peer_.clear();
  gpu_device_.clear();
  gpu_stream_.clear();
  gpu_correlation_.clear();
  gpu_launch_delta_ns_.clear();
  gpu_launch_op_.clear();
  string_ids_.assign(1, kEmptyString);
  if (++generation_ == 0) {  // wrapped: stale stamps could match again
    std::fill(stamp_.begin(), stamp_.end(), 0);
    generation_ = 1;
  }
}

}  // namespace trainscope::agent

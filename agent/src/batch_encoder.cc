#include "batch_encoder.h"

#include <algorithm>

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
  if (record.kind == EventKind::kCollective) {
    group_.push_back(BatchIndex(record.group));
    group_sequence_.push_back(record.aux);
    peer_.push_back(record.peer);
  }
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
  string_ids_.assign(1, kEmptyString);
  if (++generation_ == 0) {  // wrapped: stale stamps could match again
    std::fill(stamp_.begin(), stamp_.end(), 0);
    generation_ = 1;
  }
}

}  // namespace trainscope::agent

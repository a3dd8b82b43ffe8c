#include "batch_encoder.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::agent {

namespace {

using wire::AppendLengthDelimited;
using wire::AppendTag;
using wire::AppendVarint;
using wire::kLengthDelimited;
using wire::kMaxVarintBytes;
using wire::kVarint;
using wire::PutVarint;
using wire::ZigZag32;
using wire::ZigZag64;

// Tag (2 bytes for fields 16..20) and length (5 bytes) of a packed column.
constexpr size_t kMaxColumnHeaderBytes = 7;

// Writes `column` as a packed repeated field at `p` (room for
// kMaxColumnHeaderBytes + kMaxVarintBytes per value), each value through
// `to_wire` (the field's varint form). Nothing for an empty column, as protobuf.
template <typename T, typename Wire>
char* PutPacked(int field, const std::vector<T>& column, Wire to_wire, char* p) {
  if (column.empty()) return p;
  // The payload goes after the largest header, then moves back to the
  // header's real end: the length is known only once it is written.
  char* const payload = p + kMaxColumnHeaderBytes;
  char* end = payload;
  for (const T& value : column) end = PutVarint(to_wire(value), end);
  const auto length = static_cast<size_t>(end - payload);
  char* q = PutVarint(static_cast<uint64_t>(field) << 3 | kLengthDelimited, p);
  q = PutVarint(length, q);
  std::memmove(q, payload, length);
  return q + length;
}

inline size_t PackedBound(size_t values) {
  return values == 0 ? 0 : kMaxColumnHeaderBytes + kMaxVarintBytes * values;
}

}  // namespace

BatchEncoder::BatchEncoder() {
  for (int kind = 0; kind < 64; ++kind) {
    if (v1::EventKind_IsValid(kind)) valid_kinds_ |= uint64_t{1} << kind;
  }
  // The empty string is index 0 of every batch: always stamped current.
  static_assert(kEmptyString == 0);
  stamp_.assign(1, generation_);
  index_of_.assign(1, 0);
}

uint32_t BatchEncoder::NewBatchIndex(StringId id) {
  if (id == kEmptyString) return 0;
  if (id >= stamp_.size()) {
    const size_t size = std::max<size_t>(id + 1, stamp_.size() * 2);
    stamp_.resize(size, 0);
    index_of_.resize(size, 0);
  }
  stamp_[id] = generation_;
  index_of_[id] = static_cast<uint32_t>(string_ids_.size());
  string_ids_.push_back(id);
  return index_of_[id];
}

void BatchEncoder::Grow() {
  const size_t capacity = std::max<size_t>(256, capacity_ * 2);
  for (int c = 0; c < kColumns; ++c) {
    auto data = std::make_unique_for_overwrite<char[]>(capacity * kMaxColumnBytes[c] + kSlackBytes);
    const size_t used = column_data_[c] == nullptr
                            ? 0
                            : static_cast<size_t>(column_end_[c] - column_data_[c].get());
    if (used > 0) std::memcpy(data.get(), column_data_[c].get(), used);
    column_end_[c] = data.get() + used;
    column_data_[c] = std::move(data);
  }
  capacity_ = capacity;
}

void BatchEncoder::EncodeThread(uint32_t os_thread_id) {
  char bytes[8] = {};
  thread_varint_bytes_ = static_cast<size_t>(wire::PutVarint(os_thread_id, bytes) - bytes);
  std::memcpy(&thread_varint_, bytes, sizeof(bytes));
  thread_ = os_thread_id;
}

void BatchEncoder::Add(EventRecord record, uint32_t os_thread_id) {
  if (perturbed_) [[unlikely]] {
    record.start_ns = perturbation_.Apply(record.start_ns);
    record.end_ns = perturbation_.Apply(record.end_ns);
  }
  const auto kind = static_cast<int>(record.kind);
  const bool known = static_cast<unsigned>(kind) < 64 && (valid_kinds_ >> kind & 1) != 0;
  AppendRow(known ? kind : v1::EVENT_KIND_UNSPECIFIED, record.start_ns, record.end_ns,
            BatchIndex(record.name), os_thread_id, record.detail, record.value);
  if (protocol::IsCollectiveKind(kind)) [[unlikely]] {
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
  gpu_launch_delta_ns_.push_back(
      record.correlation != 0 ? std::min<int64_t>(record.launch_delta_ns, 0) : 0);
  gpu_launch_op_.push_back(record.correlation != 0 ? BatchIndex(record.launch_op) : 0);
}

EncodedBatch BatchEncoder::FinishEncoded(const StringTable& strings,
                                         const v1::DropCounters& drops) {
  // The rare columns and the drops first, into a reused scratch buffer sized
  // for their worst case, so that the batch's own size is known exactly.
  const size_t collectives = group_.size();
  const size_t gpus = gpu_device_.size();
  const std::string drops_bytes = drops.SerializeAsString();
  const size_t rare_bound = 3 * PackedBound(collectives) + 5 * PackedBound(gpus) +
                            kMaxColumnHeaderBytes + drops_bytes.size();
  if (rare_columns_.size() < rare_bound) rare_columns_.resize(rare_bound);
  char* const rare_begin = rare_columns_.data();
  char* p = rare_begin;
  const auto same = [](auto value) { return static_cast<uint64_t>(value); };
  p = PutPacked(11, group_, same, p);
  p = PutPacked(12, group_sequence_, same, p);
  p = PutPacked(13, peer_, ZigZag32, p);
  p = PutVarint(14 << 3 | kLengthDelimited, p);  // drops: always present, as the message sets it
  p = PutVarint(drops_bytes.size(), p);
  std::memcpy(p, drops_bytes.data(), drops_bytes.size());
  p += drops_bytes.size();
  // The GPU columns (16..20) follow the drops (14) in field order.
  char* const gpu_begin = p;
  p = PutPacked(16, gpu_device_, same, p);
  p = PutPacked(17, gpu_stream_, same, p);
  p = PutPacked(18, gpu_correlation_, same, p);
  p = PutPacked(19, gpu_launch_delta_ns_, ZigZag64, p);
  p = PutPacked(20, gpu_launch_op_, same, p);
  const auto before_gpu = static_cast<size_t>(gpu_begin - rare_begin);
  const auto gpu_bytes = static_cast<size_t>(p - gpu_begin);

  size_t column_bytes[kColumns] = {};
  size_t size = (before_gpu + gpu_bytes) + 1 + kMaxVarintBytes;  // rare columns, base time
  if (events_ > 0) {
    for (int c = 0; c < kColumns; ++c) {
      column_bytes[c] = static_cast<size_t>(column_end_[c] - column_data_[c].get());
      size += kMaxColumnHeaderBytes + column_bytes[c];
    }
  }
  strings.Visit(string_ids_, [&](std::string_view text) { size += 6 + text.size(); });

  EncodedBatch batch;
  batch.events = events_;
  std::string& out = batch.bytes;
  out.reserve(size);  // one allocation: a queued batch holds no spare capacity
  strings.Visit(string_ids_, [&](std::string_view text) { AppendLengthDelimited(2, text, &out); });
  if (base_time_ns_ != 0) {  // proto3 leaves zero out
    AppendTag(3, kVarint, &out);
    AppendVarint(static_cast<uint64_t>(base_time_ns_), &out);
  }
  if (events_ > 0) {  // fields 4..10, packed; nothing for an empty batch, as protobuf
    for (int c = 0; c < kColumns; ++c) {
      AppendLengthDelimited(4 + c, std::string_view(column_data_[c].get(), column_bytes[c]), &out);
    }
  }
  out.append(rare_begin, before_gpu + gpu_bytes);
  Reset();
  return batch;
}

v1::EventBatch BatchEncoder::Finish(const StringTable& strings, const v1::DropCounters& drops) {
  v1::EventBatch batch;
  // Our own bytes: they parse unless the encoder is wrong, which the tests catch.
  batch.ParseFromString(FinishEncoded(strings, drops).bytes);
  return batch;
}

void BatchEncoder::Reset() {
  base_time_ns_ = previous_start_ns_ = 0;
  events_ = 0;
  for (int c = 0; c < kColumns; ++c) column_end_[c] = column_data_[c].get();
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
  stamp_[kEmptyString] = generation_;
}

}  // namespace trainscope::agent

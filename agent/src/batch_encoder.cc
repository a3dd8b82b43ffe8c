#include "batch_encoder.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::agent {

namespace {

// Protobuf's wire format, for the fields an EventBatch has (agent.proto).
constexpr int kLengthDelimited = 2;
constexpr int kVarint = 0;
constexpr size_t kMaxVarintBytes = 10;
// Tag (2 bytes for fields 16..20) and length (5 bytes) of a packed column.
constexpr size_t kMaxColumnHeaderBytes = 7;

inline char* PutVarint(uint64_t value, char* p) {
  // Most column values (names, kinds, details, durations, thread ids) take
  // one to three bytes: those without a loop.
  if (value < 0x80) [[likely]] {
    *p = static_cast<char>(value);
    return p + 1;
  }
  if (value < 0x4000) {
    p[0] = static_cast<char>(static_cast<uint8_t>(value) | 0x80);
    p[1] = static_cast<char>(value >> 7);
    return p + 2;
  }
  if (value < 0x200000) {  // thread ids, sequence numbers, microsecond durations
    p[0] = static_cast<char>(static_cast<uint8_t>(value) | 0x80);
    p[1] = static_cast<char>(static_cast<uint8_t>(value >> 7) | 0x80);
    p[2] = static_cast<char>(value >> 14);
    return p + 3;
  }
  while (value >= 0x80) {
    *p++ = static_cast<char>(static_cast<uint8_t>(value) | 0x80);
    value >>= 7;
  }
  *p++ = static_cast<char>(value);
  return p;
}

void AppendVarint(uint64_t value, std::string* out) {
  char buffer[kMaxVarintBytes];
  out->append(buffer, static_cast<size_t>(PutVarint(value, buffer) - buffer));
}

void AppendTag(int field, int wire_type, std::string* out) {
  AppendVarint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type), out);
}

void AppendLengthDelimited(int field, std::string_view bytes, std::string* out) {
  AppendTag(field, kLengthDelimited, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

// Zigzag encodings of sint64 / sint32.
inline uint64_t ZigZag64(int64_t n) {
  return (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63);
}
inline uint64_t ZigZag32(int32_t n) {
  return static_cast<uint32_t>((static_cast<uint32_t>(n) << 1) ^ static_cast<uint32_t>(n >> 31));
}

// Writes `column` as a packed repeated field at `p` (room for
// kMaxColumnHeaderBytes + kMaxVarintBytes per value), each value through
// `wire` (the field's varint form). Nothing for an empty column, as protobuf.
template <typename T, typename Wire>
char* PutPacked(int field, const std::vector<T>& column, Wire wire, char* p) {
  if (column.empty()) return p;
  // The payload goes after the largest header, then moves back to the
  // header's real end: the length is known only once it is written.
  char* const payload = p + kMaxColumnHeaderBytes;
  char* end = payload;
  for (const T& value : column) end = PutVarint(wire(value), end);
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

void BatchEncoder::Add(EventRecord record, uint32_t os_thread_id) {
  if (perturbed_) [[unlikely]] {
    record.start_ns = perturbation_.Apply(record.start_ns);
    record.end_ns = perturbation_.Apply(record.end_ns);
  }
  if (rows_.empty()) base_time_ns_ = previous_start_ns_ = record.start_ns;
  const auto kind = static_cast<int>(record.kind);
  const bool known = static_cast<unsigned>(kind) < 64 && (valid_kinds_ >> kind & 1) != 0;
  Row& row = rows_.emplace_back();
  row.kind = known ? kind : v1::EVENT_KIND_UNSPECIFIED;
  // Wrapping arithmetic: absurd caller timestamps must not be undefined behaviour.
  row.start_delta_ns = static_cast<int64_t>(static_cast<uint64_t>(record.start_ns) -
                                            static_cast<uint64_t>(previous_start_ns_));
  previous_start_ns_ = record.start_ns;
  row.duration_ns = record.end_ns > record.start_ns ? static_cast<uint64_t>(record.end_ns) -
                                                          static_cast<uint64_t>(record.start_ns)
                                                    : 0;
  row.name = BatchIndex(record.name);
  row.thread = os_thread_id;
  row.detail = record.detail;
  row.value = record.value;
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
  EncodedBatch batch;
  batch.events = rows_.size();
  std::string& out = batch.bytes;
  strings.Visit(string_ids_, [&](std::string_view text) { AppendLengthDelimited(2, text, &out); });
  if (base_time_ns_ != 0) {  // proto3 leaves zero out
    AppendTag(3, kVarint, &out);
    AppendVarint(static_cast<uint64_t>(base_time_ns_), &out);
  }
  const size_t n = rows_.size();
  const size_t collectives = group_.size();
  const size_t gpus = gpu_device_.size();
  const std::string drops_bytes = drops.SerializeAsString();
  // The columns go to a reused buffer sized for the worst case, then once
  // into `out` at their exact size: a queued batch holds no spare capacity.
  const size_t bound = 7 * PackedBound(n) + 3 * PackedBound(collectives) + 5 * PackedBound(gpus) +
                       kMaxColumnHeaderBytes + drops_bytes.size();
  if (columns_.size() < bound) columns_.resize(bound);
  char* const begin = columns_.data();
  char* p = begin;
  const auto same = [](auto value) { return static_cast<uint64_t>(value); };
  // Kinds are valid enum values (Add), never negative.
  p = PutPacked(
      4, rows_, [](const Row& r) { return static_cast<uint64_t>(r.kind); }, p);
  p = PutPacked(
      5, rows_, [](const Row& r) { return ZigZag64(r.start_delta_ns); }, p);
  p = PutPacked(
      6, rows_, [](const Row& r) { return r.duration_ns; }, p);
  p = PutPacked(
      7, rows_, [](const Row& r) { return uint64_t{r.name}; }, p);
  p = PutPacked(
      8, rows_, [](const Row& r) { return uint64_t{r.thread}; }, p);
  p = PutPacked(
      9, rows_, [](const Row& r) { return uint64_t{r.detail}; }, p);
  p = PutPacked(
      10, rows_, [](const Row& r) { return r.value; }, p);
  p = PutPacked(11, group_, same, p);
  p = PutPacked(12, group_sequence_, same, p);
  p = PutPacked(13, peer_, ZigZag32, p);
  p = PutVarint(14 << 3 | kLengthDelimited, p);  // drops: always present, as the message sets it
  p = PutVarint(drops_bytes.size(), p);
  std::memcpy(p, drops_bytes.data(), drops_bytes.size());
  p += drops_bytes.size();
  p = PutPacked(16, gpu_device_, same, p);
  p = PutPacked(17, gpu_stream_, same, p);
  p = PutPacked(18, gpu_correlation_, same, p);
  p = PutPacked(19, gpu_launch_delta_ns_, ZigZag64, p);
  p = PutPacked(20, gpu_launch_op_, same, p);
  const auto column_bytes = static_cast<size_t>(p - begin);
  out.reserve(out.size() + column_bytes);
  out.append(begin, column_bytes);
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
  rows_.clear();
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

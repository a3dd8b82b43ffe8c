// Builds one trainscope.v1.EventBatch from ring records, in the columns
// agent.proto documents.
//
// Usage (sender thread):
//   BatchEncoder encoder;
//   encoder.Add(record, os_thread_id);  ...
//   encoder.AddGpu(gpu_record);          // device activity, with the GPU columns
//   EncodedBatch wire = encoder.FinishEncoded(string_table, drops);  // what the sender queues
//   v1::EventBatch batch = encoder.Finish(string_table, drops);  // the same, parsed (tests)
//
// Start times are deltas from the previous event's start (the first from
// base_time_ns), so they may be negative where threads interleave. Names and
// groups are remapped from the agent's global string ids to this batch's own
// string table (index 0 is ""), so every batch decodes alone. The seven
// columns every event has are written as varints at Add, each into its own
// reused byte buffer, so FinishEncoded only frames them as packed fields and
// copies each once (a row per event, re-read at the end to encode column by
// column, cost ~50 instructions per event more). The rare columns (groups,
// GPU) are gathered in vectors and encoded at the end. The bytes are exactly
// protobuf's: the sender never builds the message object nor has protobuf
// size it (ByteSizeLong walked every column, once per size check and twice
// more inside gRPC's serialisation).
//
// Threading: not thread-safe; one owner (the sender thread).
#ifndef TRAINSCOPE_AGENT_SRC_BATCH_ENCODER_H_
#define TRAINSCOPE_AGENT_SRC_BATCH_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "clock_perturbation.h"
#include "string_table.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/v1/agent.pb.h"
#include "wire_format.h"

namespace trainscope::agent {

// A serialized v1::EventBatch whose sequence (field 1) is not written yet:
// BatchQueue appends it when it numbers the batch (protobuf accepts fields in
// any order).
struct EncodedBatch {
  std::string bytes;
  uint64_t events = 0;
};

class BatchEncoder {
 public:
  BatchEncoder();

  // TEST ONLY: every start and end time is perturbed on the way in.
  void set_clock_perturbation(const ClockPerturbation& perturbation) {
    perturbation_ = perturbation;
    perturbed_ = perturbation.active();
  }

  void Add(EventRecord record, uint32_t os_thread_id);
  // A kOperator: Add without the kind checks, for the drainer's raw
  // operators (their ticks mapped to ns), which are most events; inline, so
  // that it is part of the drain loop.
  void AddOperator(int64_t start_ns, int64_t end_ns, StringId name, uint64_t value, uint16_t detail,
                   uint32_t os_thread_id) {
    if (perturbed_) [[unlikely]] {
      start_ns = perturbation_.Apply(start_ns);
      end_ns = perturbation_.Apply(end_ns);
    }
    AppendRow(static_cast<int>(EventKind::kOperator), start_ns, end_ns, BatchIndex(name),
              os_thread_id, detail, value);
  }
  // A GPU event: kinds kGpuKernel .. kGpuCollective get one entry in the GPU
  // columns (thread 0: the stream says where it ran); kGpuRuntime is a CPU
  // event on record.thread. A launch delta above 0 (a launch after the work
  // started: clocks disagree) is written as 0, the order the protocol requires.
  void AddGpu(const GpuEventRecord& record);
  size_t events() const { return events_; }
  // Distinct strings in the batch so far (each may be up to kMaxStringBytes).
  size_t distinct_strings() const { return string_ids_.size(); }

  // Returns the batch in wire format (sequence unset) and starts an empty one.
  EncodedBatch FinishEncoded(const StringTable& strings, const v1::DropCounters& drops);
  // FinishEncoded, parsed.
  v1::EventBatch Finish(const StringTable& strings, const v1::DropCounters& drops);

 private:
  // The columns every event has, in field order (agent.proto 4..10).
  enum Column { kKind, kStartDelta, kDuration, kName, kThread, kDetail, kValue, kColumns };
  // The most bytes one event adds to each column (varints: a kind below 128,
  // 10 for 64 bits, 5 for 32, 3 for 16), and the slack after the last one
  // for the thread id's fixed 8-byte store.
  static constexpr size_t kMaxColumnBytes[kColumns] = {1, 10, 10, 5, 5, 3, 10};
  static constexpr size_t kSlackBytes = 8;

  // Appends one event to the seven columns: `kind` a valid EventKind. The
  // column ends are copied to locals and back: a store through a char* may
  // alias any member, so members would be reloaded after each byte written.
  void AppendRow(int kind, int64_t start_ns, int64_t end_ns, uint32_t name_index,
                 uint32_t os_thread_id, uint16_t detail, uint64_t value) {
    if (events_ == capacity_) [[unlikely]]
      Grow();
    if (os_thread_id != thread_) [[unlikely]]
      EncodeThread(os_thread_id);
    if (events_ == 0) base_time_ns_ = previous_start_ns_ = start_ns;
    const int64_t previous_start_ns = previous_start_ns_;
    const uint64_t thread_varint = thread_varint_;
    const size_t thread_varint_bytes = thread_varint_bytes_;
    char* kind_end = column_end_[kKind];
    char* start_delta_end = column_end_[kStartDelta];
    char* duration_end = column_end_[kDuration];
    char* name_end = column_end_[kName];
    char* thread_end = column_end_[kThread];
    char* detail_end = column_end_[kDetail];
    char* value_end = column_end_[kValue];
    *kind_end++ = static_cast<char>(kind);
    // Wrapping arithmetic: absurd caller timestamps must not be undefined behaviour.
    start_delta_end = wire::PutVarint(
        wire::ZigZag64(static_cast<int64_t>(static_cast<uint64_t>(start_ns) -
                                            static_cast<uint64_t>(previous_start_ns))),
        start_delta_end);
    duration_end = wire::PutVarint(
        end_ns > start_ns ? static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns) : 0,
        duration_end);
    name_end = wire::PutVarint(name_index, name_end);
    // Always 8 bytes stored (kSlackBytes covers the last event), the varint's kept.
    std::memcpy(thread_end, &thread_varint, sizeof(thread_varint));
    thread_end += thread_varint_bytes;
    detail_end = wire::PutVarint(detail, detail_end);
    value_end = wire::PutVarint(value, value_end);
    column_end_[kKind] = kind_end;
    column_end_[kStartDelta] = start_delta_end;
    column_end_[kDuration] = duration_end;
    column_end_[kName] = name_end;
    column_end_[kThread] = thread_end;
    column_end_[kDetail] = detail_end;
    column_end_[kValue] = value_end;
    previous_start_ns_ = start_ns;
    ++events_;
  }
  // Room for at least one more event in every column.
  void Grow();
  // The thread id's varint, kept for the next event of the same thread
  // (the drainer adds a ring's events in a run).
  void EncodeThread(uint32_t os_thread_id);

  uint32_t BatchIndex(StringId id) {
    if (id < stamp_.size() && stamp_[id] == generation_) [[likely]]
      return index_of_[id];
    return NewBatchIndex(id);
  }
  uint32_t NewBatchIndex(StringId id);
  void Reset();

  ClockPerturbation perturbation_;
  bool perturbed_ = false;
  uint64_t valid_kinds_ = 0;  // bit k: EventKind k is known (kinds above 63 are not)
  int64_t base_time_ns_ = 0;
  int64_t previous_start_ns_ = 0;
  size_t events_ = 0;
  size_t capacity_ = 0;  // events every column has room for
  std::unique_ptr<char[]> column_data_[kColumns];
  char* column_end_[kColumns] = {};
  uint32_t thread_ = 0;             // the id thread_varint_ encodes
  uint64_t thread_varint_ = 0;      // its varint bytes, little-endian
  size_t thread_varint_bytes_ = 1;  // varint of 0
  std::vector<uint32_t> group_;
  std::vector<uint64_t> group_sequence_;
  std::vector<int32_t> peer_;
  std::vector<uint32_t> gpu_device_;
  std::vector<uint32_t> gpu_stream_;
  std::vector<uint64_t> gpu_correlation_;
  std::vector<int64_t> gpu_launch_delta_ns_;
  std::vector<uint32_t> gpu_launch_op_;

  // Global id -> index in this batch, valid where stamp_[id] == generation_.
  std::vector<uint32_t> index_of_;
  std::vector<uint32_t> stamp_;
  uint32_t generation_ = 1;
  std::vector<StringId> string_ids_ = {kEmptyString};  // batch index -> global id
  std::string rare_columns_;  // FinishEncoded's scratch, kept between batches
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_BATCH_ENCODER_H_

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
// string table (index 0 is ""), so every batch decodes alone. Columns are
// gathered in reused vectors and written once, straight into the wire format
// (packed varints, as protobuf writes them): the sender never builds the
// message object nor has protobuf size it (ByteSizeLong walked every column,
// once per size check and twice more inside gRPC's serialisation).
//
// Threading: not thread-safe; one owner (the sender thread).
#ifndef TRAINSCOPE_AGENT_SRC_BATCH_ENCODER_H_
#define TRAINSCOPE_AGENT_SRC_BATCH_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "clock_perturbation.h"
#include "string_table.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/v1/agent.pb.h"

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
  // A GPU event: kinds kGpuKernel .. kGpuCollective get one entry in the GPU
  // columns (thread 0: the stream says where it ran); kGpuRuntime is a CPU
  // event on record.thread. A launch delta above 0 (a launch after the work
  // started: clocks disagree) is written as 0, the order the protocol requires.
  void AddGpu(const GpuEventRecord& record);
  size_t events() const { return rows_.size(); }
  // Distinct strings in the batch so far (each may be up to kMaxStringBytes).
  size_t distinct_strings() const { return string_ids_.size(); }

  // Returns the batch in wire format (sequence unset) and starts an empty one.
  EncodedBatch FinishEncoded(const StringTable& strings, const v1::DropCounters& drops);
  // FinishEncoded, parsed.
  v1::EventBatch Finish(const StringTable& strings, const v1::DropCounters& drops);

 private:
  // The columns every event has, one row per event: one capacity check per
  // event instead of one per column (the sender's per-event cost).
  struct Row {
    int64_t start_delta_ns;
    uint64_t duration_ns;
    uint64_t value;
    int32_t kind;
    uint32_t name;
    uint32_t thread;
    uint32_t detail;
  };

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
  std::vector<Row> rows_;
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
  std::vector<char> columns_;  // FinishEncoded's scratch, kept between batches
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_BATCH_ENCODER_H_

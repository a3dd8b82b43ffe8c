// One row's operators in the Marey graph: a device's CPU operators, one of
// its GPU streams (kernels are its "compute", NCCL kernels and copies its
// communication), or a device group's
// minimum, average or maximum (MareyModel builds those), with the indexes a
// frame needs to lay the row out without scanning it (MareyLayout): compute
// and communication sorted by start, compute's running busy time, a coarse
// index over compute for zoomed-out frames, communication in fixed-size
// blocks and as compact spans for the dense inner loop.
//
// Usage:
//   MareyTrack track;
//   track.rank = 3;
//   track.Add(operator_record);  // keyed to join the same operator on other rows
//   track.Push({.start = 100, .end = 180, .key = key, .cls = OpClass::kCompute});
//   track.Prepare();  // sorts and indexes; again after more Add/Push calls
//   int64_t busy = track.busy_prefix[track.compute.size()];
//
// Threading: a plain value; Prepare mutates, the rest only reads (a
// prepared track may be read by several layout threads).
#ifndef TRAINSCOPE_VIEWER_MAREY_TRACK_H_
#define TRAINSCOPE_VIEWER_MAREY_TRACK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct MareyTrack {
  struct Op {
    int64_t start = 0;
    int64_t end = 0;
    uint64_t key = 0;       // joins the same operator across rows
    int32_t raw_delta = 0;  // raw start - start - MareyTrack::raw_base
    uint32_t name = 0;
    uint32_t step = 0;
    OpClass cls = OpClass::kCompute;
    // A send's or receive's other rank plus one (0: none), in the three
    // bytes the alignment leaves after `cls`: an Op stays 40 bytes, and a
    // track holds millions. Ranks up to 2^24 - 2.
    uint8_t peer_low = 0;
    uint16_t peer_high = 0;

    int64_t peer() const {
      return static_cast<int64_t>((static_cast<uint32_t>(peer_high) << 8) | peer_low) - 1;
    }
    void set_peer(int64_t rank) {
      const uint32_t v = rank < 0 || rank >= (1 << 24) - 1 ? 0 : static_cast<uint32_t>(rank + 1);
      peer_low = static_cast<uint8_t>(v & 0xFF);
      peer_high = static_cast<uint16_t>(v >> 8);
    }
  };
  static_assert(sizeof(Op) == 40, "an Op is read by the million each frame");
  // A coarse index entry over compute on the aligned clock: at uniformly
  // spaced times, everything a density bin's edge needs. A zoomed-out frame
  // then reads one small array per row instead of probing the operators,
  // which is memory-bound (a cache miss per probe) with thousands of rows.
  struct FineEdge {
    size_t index = 0;                // compute operators starting before the time
    int64_t busy = 0;                // busy_prefix[index]
    int64_t next_start = INT64_MAX;  // compute[index].start
    int64_t prev_end = INT64_MIN;    // compute[index - 1].end
  };
  // Communication as the dense loop reads it: 16 bytes instead of an Op's 40
  // (that loop streams every visible one each frame).
  struct Span {
    int64_t start;
    int32_t duration;  // clamped to 2^31 - 1 ns
    OpClass cls;
  };
  // Communication in blocks of kBlock operators (block_*).
  static constexpr size_t kBlock = 32;
  static constexpr size_t kOpsPerFineEdge = 8;
  static constexpr size_t kMinOpsForFineEdges = 1024;

  // Adds a device's operator (its rank's track, operators of one step in
  // time order): the first one fixes raw_base, and its key joins it with the
  // same operator on other devices (a send with its receive, a collective
  // by its sequence number, an NCCL kernel by its group and sequence,
  // compute, kernels and copies by step, name and occurrence in the step).
  // Returns what was added.
  Op Add(const OperatorRecord& record);
  // Adds an operator as it is (compute or communication by IsMergeable);
  // Prepare before reading the indexes.
  void Push(const Op& op);
  // Combines two hash values (SplitMix64), for operator keys.
  static uint64_t MixKey(uint64_t h, uint64_t v);
  // Sorts by start and brings every index up to date; nothing when nothing
  // changed. Operators pushed in time order after the last Prepare (a live
  // job's newest step) only extend the indexes: a live frame costs the new
  // operators, not the whole track.
  void Prepare();
  // After operators were removed or changed in place (eviction): the next
  // Prepare rebuilds every index.
  void Invalidate();
  // The index entry nearest to t (fine_ns > 0).
  const FineEdge& FineAt(int64_t t) const {
    const int64_t i = (t - fine_origin + fine_ns / 2) / fine_ns;
    return fine[static_cast<size_t>(
        std::clamp<int64_t>(i, 0, static_cast<int64_t>(fine.size()) - 1))];
  }
  // An operator's start and end on the displayed clock: the aligned one, or
  // with `raw` the device's own.
  int64_t StartOf(const Op& op, bool raw) const {
    return raw ? op.start + raw_base + op.raw_delta : op.start;
  }
  int64_t EndOf(const Op& op, bool raw) const {
    return raw ? op.end + raw_base + op.raw_delta : op.end;
  }

  uint32_t rank = 0;
  bool gpu = false;  // a GPU stream's track
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
  std::vector<Op> compute;  // compute operators or kernels (IsMergeable)
  std::vector<Op> comm;
  std::vector<int64_t> busy_prefix;       // compute: summed durations of compute[0, i)
  std::vector<int64_t> comm_busy_prefix;  // comm: summed durations of comm[0, i)
  int64_t raw_base = 0;
  bool raw_base_set = false;
  int64_t max_compute = 0;
  int64_t max_comm = 0;
  bool dirty = true;
  // Per block: its extent on the aligned clock, its raw deltas' range and
  // its first operator's class.
  std::vector<int64_t> block_start;
  std::vector<int64_t> block_end;
  std::vector<int32_t> block_raw_low;
  std::vector<int32_t> block_raw_high;
  std::vector<OpClass> block_class;
  // (step, name) -> operators seen, to number repeated operators in a step.
  std::unordered_map<uint64_t, uint32_t> occurrences;
  uint64_t newest_step = 0;
  std::vector<Span> comm_spans;
  int64_t fine_origin = 0;
  int64_t fine_ns = 0;  // 0: no index (few operators)
  std::vector<FineEdge> fine;

 private:
  // From scratch, or (appended_from > 0) extended for compute[appended_from..).
  void BuildFineEdges(size_t appended_from);

  size_t prepared_compute_ = 0;  // operators the indexes cover
  size_t prepared_comm_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_TRACK_H_

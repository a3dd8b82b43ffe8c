// The aligned operators of the job's recent closed steps, every device,
// queryable by time range and device set (what the Marey graph draws).
// Bounded: past `max_operators` the oldest steps are evicted (counted).
//
// Layout: one block per inserted step; in a block the operators are sorted
// by (rank, start) with, per rank, the longest duration, so that a range
// query finds operators that started before the range and still run in it.
//
// Usage:
//   OperatorStore store({.max_operators = 4'000'000});
//   store.Insert(std::move(closed_step.operators));   // one step at a time
//   store.ForEach({.start_ns = a, .end_ns = b, .ranks = {0, 3}},
//                 [](const OperatorRecord& op) { ... });
//
// Threading: not thread-safe; owned by the job's analysis thread (queries
// run there too).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_STORE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_STORE_H_

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "trainscope/collector/analysis/operator_record.h"

namespace trainscope::collector {

struct OperatorStoreOptions {
  size_t max_operators = 2'000'000;  // about 100 bytes each
};

// Operators overlapping [start_ns, end_ns] (inclusive) on `ranks`.
struct OperatorRange {
  int64_t start_ns = 0;  // start 0 and end 0: everything held
  int64_t end_ns = 0;
  std::vector<uint32_t> ranks;  // ascending; empty: every rank
  bool raw_timestamps = false;  // the range is on the devices' own clocks
  bool everything() const { return start_ns == 0 && end_ns == 0; }
};

struct OperatorStoreStats {
  uint64_t operators = 0;  // held now
  uint64_t steps = 0;      // held now
  uint64_t evicted_steps = 0;
  uint64_t evicted_operators = 0;
};

class OperatorStore {
 public:
  explicit OperatorStore(OperatorStoreOptions options = {});

  // The operators of one closed step (any order; sorted here).
  void Insert(std::vector<OperatorRecord> operators);
  // The storage of the latest evicted step (emptied), for the caller to fill
  // again; empty when nothing was evicted since the last call.
  std::vector<OperatorRecord> TakeEvictedStorage();

  // Every operator overlapping `range`: rank by rank (ascending), and per
  // rank step by step in start order.
  void ForEach(const OperatorRange& range, absl::FunctionRef<void(const OperatorRecord&)> fn) const;
  // All operators of each (rank, step) that has some operator overlapping
  // `range`, sorted by start: for per-step context such as occurrence
  // indices. Same order as ForEach.
  void ForEachDeviceStep(
      const OperatorRange& range,
      absl::FunctionRef<void(uint32_t rank, uint64_t step, absl::Span<const OperatorRecord>)> fn)
      const;

  // [earliest start, latest end] of what is held; {0, 0} when empty.
  std::pair<int64_t, int64_t> Extent(bool raw_timestamps) const;
  // Ranks with operators held, ascending.
  std::vector<uint32_t> Ranks() const;
  OperatorStoreStats stats() const;

 private:
  struct Bounds {
    int64_t min_start = 0;
    int64_t max_end = 0;
    int64_t max_duration = 0;
  };
  struct DeviceSpan {
    uint32_t rank = 0;
    uint32_t begin = 0;  // into Block::operators
    uint32_t end = 0;
    Bounds aligned, raw;
  };
  struct Block {
    uint64_t step = 0;
    std::vector<OperatorRecord> operators;  // by (rank, start)
    std::vector<DeviceSpan> devices;        // by rank
    Bounds aligned, raw;
  };

  static const DeviceSpan* FindDevice(const Block& block, uint32_t rank);
  static bool Overlaps(const Bounds& b, const OperatorRange& range);
  // Candidates [first, last) of `span` for `range`: every operator that
  // overlaps it lies inside (callers still check each).
  static std::pair<uint32_t, uint32_t> Candidates(const Block& block, const DeviceSpan& span,
                                                  const OperatorRange& range);
  std::vector<uint32_t> RanksFor(const OperatorRange& range) const;
  // Calls fn(block, span, first, last) for every device span that may hold
  // operators overlapping `range`, rank by rank, then block by block.
  void ForEachCandidateSpan(
      const OperatorRange& range,
      absl::FunctionRef<void(const Block&, const DeviceSpan&, uint32_t, uint32_t)> fn) const;

  const OperatorStoreOptions options_;
  std::deque<Block> blocks_;  // oldest first
  std::vector<OperatorRecord> evicted_storage_;
  OperatorStoreStats stats_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_STORE_H_

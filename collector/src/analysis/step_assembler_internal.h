// StepAssembler's private pieces shared by its two source files
// (step_assembler.cc: events in; step_assembler_close.cc: closing steps into
// metrics): the per-device and per-step state and small helpers. Private to
// the analysis library.
#ifndef TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_STEP_ASSEMBLER_INTERNAL_H_
#define TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_STEP_ASSEMBLER_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "trainscope/collector/analysis/step_assembler.h"

namespace trainscope::collector {
namespace step_internal {

namespace v1 = ::trainscope::v1;

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
// OPERATOR_BEGIN events held per device waiting for their END.
constexpr size_t kMaxOpenOperators = 256;
// Buckets of closed steps kept for reuse (a few steps' worth of devices).
constexpr size_t kMaxSpareBuckets = 4096;
// How far back a "flops" counter looks for the operator it belongs to
// (other threads' events may sit in between).
constexpr int kFlopsLookback = 16;

struct Interval {
  int64_t start;
  int64_t end;
};

// Length of the union of `v` (reordered). Nested operators (aten::linear
// around aten::addmm) count once.
inline int64_t Covered(std::vector<Interval>& v) {
  if (v.empty()) return 0;
  int64_t total = 0;
  // One thread's operators arrive in end order (recorded when they end):
  // sweep from the latest end without sorting.
  if (std::is_sorted(v.begin(), v.end(),
                     [](const Interval& a, const Interval& b) { return a.end < b.end; })) {
    int64_t lo = v.back().start, hi = v.back().end;
    for (size_t i = v.size() - 1; i-- > 0;) {
      if (v[i].end >= lo) {
        lo = std::min(lo, v[i].start);
      } else {
        total += hi - lo;
        lo = v[i].start;
        hi = v[i].end;
      }
    }
    return total + (hi - lo);
  }
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  int64_t lo = v.front().start, hi = v.front().end;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].start <= hi) {
      hi = std::max(hi, v[i].end);
    } else {
      total += hi - lo;
      lo = v[i].start;
      hi = v[i].end;
    }
  }
  return total + (hi - lo);
}

inline v1::OperatorClass ClassOf(uint32_t collective_kind) {
  switch (collective_kind) {
    case v1::COLLECTIVE_KIND_SEND:
      return v1::OPERATOR_CLASS_SEND;
    case v1::COLLECTIVE_KIND_RECV:
      return v1::OPERATOR_CLASS_RECV;
    default:
      return v1::OPERATOR_CLASS_COLLECTIVE;
  }
}

// Share of a ring collective's bytes that crosses each ring link (NCCL).
inline double RingFactor(v1::CollectiveKind kind, size_t participants) {
  const double p = static_cast<double>(participants);
  switch (kind) {
    case v1::COLLECTIVE_KIND_ALL_REDUCE:
      return 2.0 * (p - 1.0) / p;
    case v1::COLLECTIVE_KIND_ALL_GATHER:
    case v1::COLLECTIVE_KIND_REDUCE_SCATTER:
      return (p - 1.0) / p;
    default:
      return 0.0;
  }
}

}  // namespace step_internal

struct StepAssembler::Bucket {
  // OPERATOR and COLLECTIVE events, in arrival order. For operators,
  // group_sequence carries the FLOPs of their "flops" counter.
  std::vector<DeviceEvent> events;
  int64_t start_raw_ns = 0;
  int64_t end_raw_ns = 0;
  bool has_start = false;
  bool ended = false;
  std::array<int64_t, 5> phase_ns{};  // by v1::Phase
  std::array<bool, 5> phase_seen{};
  uint64_t flops = 0;
  uint64_t peak_memory = 0;

  // Back to a fresh bucket, keeping the events' capacity for reuse.
  void Reset() {
    std::vector<DeviceEvent> kept = std::move(events);
    kept.clear();
    *this = Bucket();
    events = std::move(kept);
  }
};

struct StepAssembler::OpenStep {
  std::vector<std::unique_ptr<Bucket>> buckets;  // by rank
};

struct StepAssembler::Device {
  bool live = true;
  bool silent = false;
  bool active = false;  // an event since the last Tick
  bool ticked = false;  // last_seen_ns is set
  int64_t last_seen_ns = 0;
  bool has_mark = false;
  // Sent something after its latest mark other than what belongs to the
  // step that mark ended (its memory peak, its phases).
  bool past_mark = true;
  bool mark_in_batch = false;  // the latest mark came in the batch now arriving
  uint64_t step = 0;           // the current step, once has_mark
  Bucket* current = nullptr;   // null: dropping until the next mark
  Bucket* previous = nullptr;  // the step the last mark ended, while open
  uint64_t previous_step = 0;
  int64_t last_mark_raw_ns = std::numeric_limits<int64_t>::min();
  std::unique_ptr<Bucket> prelude;  // events before the first mark
  uint32_t stage = 0;
  size_t last_step_events = 0;              // to reserve the next step's bucket
  std::vector<DeviceEvent> open_operators;  // OPERATOR_BEGIN awaiting END
};

struct StepAssembler::Scratch {
  std::vector<step_internal::Interval> compute, communication, all, forward, backward;
  absl::flat_hash_map<uint32_t, int64_t> waited;  // rank -> wait on it
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_ANALYSIS_STEP_ASSEMBLER_INTERNAL_H_

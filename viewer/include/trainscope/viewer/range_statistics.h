// Where the time went over a range of steps, per device and in total: the
// analysis' own per-device step figures (wall time, data wait, compute,
// collective wait, transfer, idle and, for GPU work, kernel time) summed over
// the range's steps, and the operators and GPU work recorded in them.
//
// A range is whole steps (StepSpan): the analysis measures wait and data wait
// per step, so clipping a step in the middle would have to guess where in it
// they fell. A time range dragged in the Marey graph becomes the steps it
// mostly covers (StepsInTimeRange).
//
// Usage:
//   std::optional<StepSpan> span = RangeStatistics::StepsInTimeRange(store.steps(), t0, t1);
//   RangeStatistics::Result r = RangeStatistics::Compute(store, span);  // nullopt: every step
//   r.total.compute_ns == sum of r.ranks[i].compute_ns
//
// Threading: stateless; Compute only reads the store (the UI thread's).
#ifndef TRAINSCOPE_VIEWER_RANGE_STATISTICS_H_
#define TRAINSCOPE_VIEWER_RANGE_STATISTICS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

// Steps first..last, both included.
struct StepSpan {
  uint64_t first = 0;
  uint64_t last = 0;
  bool Contains(uint64_t step) const { return step >= first && step <= last; }
  bool operator==(const StepSpan& other) const {
    return first == other.first && last == other.last;
  }
};

// "100-120" as a StepSpan; INVALID_ARGUMENT naming `flag` and the text
// otherwise (first <= last; the flags --steps and --range-steps).
absl::StatusOr<StepSpan> ParseStepSpan(const std::string& flag, const std::string& text);

class RangeStatistics {
 public:
  // One device's figures over the range, or (rank unset) their sum. With
  // GPU work the analysis reports compute, collective wait, transfer and
  // idle as device time (DeviceStepRecord), kernel_ns its busy time.
  struct Part {
    std::optional<uint32_t> rank;  // unset: the total over every device
    uint32_t steps = 0;            // device steps summed
    int64_t wall_ns = 0;           // step time
    int64_t data_wait_ns = 0;
    int64_t compute_ns = 0;
    int64_t collective_wait_ns = 0;
    int64_t transfer_ns = 0;
    int64_t idle_ns = 0;
    bool has_gpu = false;
    int64_t kernel_ns = 0;       // has_gpu: compute kernels' busy time
    uint64_t operators = 0;      // CPU operators recorded in the range's steps
    uint64_t gpu_operators = 0;  // kernels, NCCL kernels and copies
  };
  struct Result {
    bool whole_job = true;  // no range selected: every step held
    bool empty = true;      // no step in the range
    uint64_t first_step = 0;
    uint64_t last_step = 0;
    size_t steps = 0;      // steps held in [first_step, last_step]
    int64_t start_ns = 0;  // the first step's start and the last one's end (aligned clock)
    int64_t end_ns = 0;
    std::vector<Part> ranks;  // by rank
    Part total;
  };

  // `span` nullopt: the whole loaded job (every step held, every operator).
  static Result Compute(const MareyTrackStore& store, std::optional<StepSpan> span);

  // The steps a time range [t0, t1] selects on the aligned clock: those with
  // at least half their length inside it; when none is (a range inside one
  // step), the step that overlaps it most; nullopt when none overlaps.
  static std::optional<StepSpan> StepsInTimeRange(const std::map<uint64_t, StepRecord>& steps,
                                                  int64_t t0, int64_t t1);

  // Adds `device`'s figures into `part` (one step).
  static void Accumulate(const DeviceStepRecord& device, Part* part);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_RANGE_STATISTICS_H_

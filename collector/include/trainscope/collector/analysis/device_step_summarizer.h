// Turns one device's buffered share of a closing step into its aligned
// operators and its DeviceStep metrics: step time from its marks, compute,
// communication and idle time as the union of its operators' intervals
// clipped to the step (nested operators count once), data wait (the
// DATA_WAIT phase, else the time before its first operator), forward and
// backward (their phases, else their operators' union), FLOPs, memory peak,
// and from CollectiveMatcher its waits, whom it waited for most and its
// lateness.
//
// Usage:
//   DeviceStepSummarizer summarizer(&clock, &matcher);
//   v1::DeviceStep device;
//   summarizer.Summarize(rank, stage, step, buffer, &device, &operators, &links);
//
// Threading: not thread-safe (reuses scratch space); owned by the
// StepAssembler's thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_SUMMARIZER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_SUMMARIZER_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "trainscope/collector/analysis/collective_matcher.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/device_step_buffer.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class DeviceStepSummarizer {
 public:
  // The pointers must outlive the summarizer.
  DeviceStepSummarizer(const ReferenceClock* clock, CollectiveMatcher* matcher)
      : clock_(clock), matcher_(matcher) {}

  // Appends the buffer's operators, aligned, to `ops`, fills `out` and adds
  // the links of the instances its communication completes to `links`.
  void Summarize(uint32_t rank, uint32_t stage, uint64_t step, const DeviceStepBuffer& buffer,
                 trainscope::v1::DeviceStep* out, std::vector<OperatorRecord>* ops,
                 CollectiveMatcher::Links* links);

  // An interval on the reference clock.
  struct Interval {
    int64_t start;
    int64_t end;
  };
  // Length of the union of `v` (reordered).
  static int64_t Covered(std::vector<Interval>& v);

 private:
  // What aligning the operators found, for the metrics.
  struct Tally {
    int64_t first_start = std::numeric_limits<int64_t>::max();
    int64_t last_end = std::numeric_limits<int64_t>::min();
    int64_t wait = 0;  // summed over the communication operators
    int64_t lateness = 0;
    uint32_t operators = 0;
    uint32_t collectives = 0;
  };
  // Appends the aligned operators and collects their intervals and waits.
  Tally Align(uint32_t rank, uint32_t stage, uint64_t step, const DeviceStepBuffer& buffer,
              std::vector<OperatorRecord>* ops, CollectiveMatcher::Links* links);
  // The metrics from the step's marks, the intervals and `tally`.
  void Fill(uint32_t rank, uint32_t stage, uint64_t step, const DeviceStepBuffer& buffer,
            const Tally& tally, trainscope::v1::DeviceStep* out);
  // The rank waited for longest (the lowest of a tie), -1 for none.
  int32_t MostWaitedFor() const;

  const ReferenceClock* const clock_;
  CollectiveMatcher* const matcher_;
  // Scratch space, kept between calls.
  std::vector<Interval> compute_, communication_, all_, forward_, backward_;
  absl::flat_hash_map<uint32_t, int64_t> waited_;  // rank -> wait on it
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_SUMMARIZER_H_

// Turns one device's buffered share of a closing step into its aligned
// operators and its DeviceStep metrics: step time from its marks, compute,
// communication and idle time as the union of its operators' intervals
// clipped to the step (nested operators count once), data wait (the
// DATA_WAIT phase, else the time before its first operator), forward and
// backward (their phases, else their operators' union), FLOPs, memory peak,
// and from CollectiveMatcher its waits, whom it waited for most and its
// lateness. GPU work in the buffer (the device's kernels, NCCL kernels and
// copies launched in the step) becomes GPU stream operators, and the device
// time figures replace the host's (GpuStepSummarizer); cpu_compute_ns and
// cpu_collective_ns keep the host's. Host collectives and NCCL kernels are
// matched by separate matchers: a device with NCCL kernels takes its waits
// and links from them, never from both.
//
// Usage:
//   DeviceStepSummarizer summarizer(&clock, &matcher, &gpu_matcher, &strings);
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
#include "trainscope/collector/analysis/gpu_step_summarizer.h"
#include "trainscope/collector/analysis/interval_set.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class DeviceStepSummarizer {
 public:
  // The pointers must outlive the summarizer. `gpu_matcher` matches NCCL
  // kernels (null: they get no waits); `strings` names the top kernels.
  DeviceStepSummarizer(const ReferenceClock* clock, CollectiveMatcher* matcher,
                       CollectiveMatcher* gpu_matcher = nullptr,
                       const JobStrings* strings = nullptr)
      : clock_(clock), matcher_(matcher), gpu_(strings, gpu_matcher) {}


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
  // The device-time figures, when the step has GPU work.
  void FillGpu(uint32_t rank, int64_t start, int64_t end, const DeviceStepBuffer& buffer,
               const Tally& tally, trainscope::v1::DeviceStep* out);

  const ReferenceClock* const clock_;
  CollectiveMatcher* const matcher_;
  // Scratch space, kept between calls.
  std::vector<Interval> compute_, communication_, all_, forward_, backward_;
  absl::flat_hash_map<uint32_t, int64_t> waited_;  // rank -> wait on it
  CollectiveMatcher::Links host_links_;  // a GPU device's host collectives' (dropped)
  IntervalSet host_operators_, host_syncs_, host_data_wait_;
  GpuStepSummarizer gpu_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_SUMMARIZER_H_

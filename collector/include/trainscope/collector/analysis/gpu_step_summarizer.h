// The device-time figures of one device's step: what its GPU streams ran for
// the launches of that step (each GPU event belongs to the step whose CPU
// launch it came from). DeviceStepSummarizer hands it the step's aligned GPU
// operators and the host's context; it fills the GPU fields of DeviceStep
// and, because the device is the truth about where time went, overrides the
// host's compute, collective, wait, transfer, idle and FLOPS figures:
//   compute_ns     = gpu_busy_ns: the union of compute kernels over all
//                    streams (not clipped: a kernel of this step may run
//                    after the CPU's next step mark)
//   collective_ns  = (with NCCL kernels) the union of NCCL kernels; wait_ns of it is each NCCL
//                    kernel's time until the last peer's matching kernel
//                    (same group and sequence) started, on the reference
//                    clock (CollectiveMatcher over NCCL kernels only);
//                    transfer_ns is the rest
//   idle_ns        = the step's window (its CPU marks) where no GPU work of
//                    any step ran (work of earlier steps that spilled into
//                    it is kept per rank), split by why: the host sat in a
//                    sync call (gpu_idle_host_sync_ns), else waited for data
//                    (gpu_idle_data_wait_ns), else was in operators and
//                    launched nothing yet (gpu_idle_launch_bound_ns)
//   copy_stall_ns  = H2D/D2H copy time with no compute kernel running
//   flops          = the kernels' FLOPs (else the host's counters), over
//                    gpu_busy_ns for flops_per_second
//
// Usage:
//   GpuStepSummarizer gpu(&strings, &gpu_matcher);
//   gpu.Begin();
//   gpu.Add(event, aligned_operator, &links);  // each GPU event of the step
//   if (gpu.any()) gpu.Fill(rank, start, end, host, host_flops, &device_step);
//
// Threading: not thread-safe (scratch space, per-rank spill-over); owned by
// the StepAssembler's thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_GPU_STEP_SUMMARIZER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_GPU_STEP_SUMMARIZER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "trainscope/collector/analysis/collective_matcher.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/interval_set.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class GpuStepSummarizer {
 public:
  // Kernel names listed in DeviceStep.top_kernels at most.
  static constexpr size_t kTopKernels = 10;
  // Disjoint intervals of spilled-over work kept per rank at most.
  static constexpr size_t kMaxSpillIntervals = 1024;

  // What the host did during the step, on the reference clock, normalized.
  struct Host {
    const IntervalSet* operators = nullptr;  // the union of its CPU operators
    const IntervalSet* syncs = nullptr;      // its sync runtime calls
    const IntervalSet* data_wait = nullptr;  // where it waited for the next batch
  };

  // `strings` names the kernels; `matcher` matches NCCL kernels only. Either
  // may be null (no names; no waits). The pointers must outlive this.
  GpuStepSummarizer(const JobStrings* strings, CollectiveMatcher* matcher)
      : strings_(strings), matcher_(matcher) {}

  // Starts one device's step.
  void Begin();
  // One GPU event of the step and its aligned operator (op.is_gpu()); NCCL
  // kernels are matched with their peers' and add their instance's links to
  // `links`. The event says what a copy copies (its CopyKind).
  void Add(const DeviceEvent& e, const OperatorRecord& op, CollectiveMatcher::Links* links);
  bool any() const { return events_ > 0; }
  // Fills `out`'s device-time figures for the step of `rank` whose window is
  // [start, end) on the reference clock; `host_flops` stands in when the
  // kernels carry no FLOPs.
  void Fill(uint32_t rank, int64_t start, int64_t end, const Host& host, uint64_t host_flops,
            trainscope::v1::DeviceStep* out);

 private:
  struct KernelTotals {
    trainscope::v1::OperatorClass op_class = trainscope::v1::OPERATOR_CLASS_UNSPECIFIED;
    uint32_t count = 0;
    int64_t total_ns = 0;
    // Launching operators and how many of these kernels each launched.
    absl::InlinedVector<std::pair<uint32_t, uint32_t>, 2> launch_ops;
  };

  void FillTopKernels(trainscope::v1::DeviceStep* out) const;

  const JobStrings* const strings_;
  CollectiveMatcher* const matcher_;
  // Scratch space of the step being summarized.
  IntervalSet compute_, nccl_, h2d_, d2h_, other_copy_, all_;
  absl::flat_hash_map<uint32_t, KernelTotals> kernels_by_name_;
  absl::flat_hash_set<uint64_t> streams_;  // gpu_device << 32 | gpu_stream
  absl::flat_hash_map<uint32_t, int64_t> waited_;  // rank -> NCCL wait on it
  uint32_t events_ = 0;
  uint32_t kernels_ = 0;
  uint32_t nccl_kernels_ = 0;
  uint64_t flops_ = 0;
  int64_t wait_ = 0;
  int64_t lateness_ = 0;
  // Per rank: GPU work of closed steps that ran past their window's end.
  absl::flat_hash_map<uint32_t, IntervalSet> spill_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_GPU_STEP_SUMMARIZER_H_

// Whether one device has delivered all the GPU work of a step. A kernel may
// run, and be reported, long after its host passed the next step mark, so a
// step of a GPU device waits until each GPU stream that ran its work has
// delivered work launched after the step's end (a stream runs its work in
// launch order), or any stream delivered work launched after the next step's
// end, or the wait timed out (then a device that never delivered GPU work
// stops being waited for: it said it has GPUs but runs nothing on them).
//
// Usage (StepAssembler, per device):
//   GpuWorkProgress gpu;
//   gpu.Expect();                                       // Hello.gpus
//   GpuWorkProgress::Before before = gpu.Note(stream, launch_ns);
//   if (gpu.Awaits(step, buffer, next_buffer)) ...     // holds the step open
//   if (gpu.BoundWait(step, awaiting, now, wait_ns)) ...  // gave up waiting
//
// Threading: not thread-safe; owned by the job's analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_GPU_WORK_PROGRESS_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_GPU_WORK_PROGRESS_H_

#include <cstdint>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "trainscope/collector/analysis/device_step_buffer.h"

namespace trainscope::collector {

class GpuWorkProgress {
 public:
  // The launch times a Note found, to tell whether it passed a step's end.
  struct Before {
    int64_t stream_launch_ns;  // the stream's latest before (int64 min: a new stream)
    int64_t max_launch_ns;     // any stream's latest before (int64 min: none)
  };

  // The device has GPUs: wait for its work before any arrived.
  void Expect() { gpu_ = true; }
  // GPU work launched at `launch_ns` (its start when the launch is unknown)
  // delivered on `stream` (gpu_device << 32 | gpu_stream).
  Before Note(uint64_t stream, int64_t launch_ns);

  // Whether `step` still waits for this device's GPU work. `buffer`: the
  // device's buffer of `step`, `next`: of step + 1 (null: none).
  bool Awaits(uint64_t step, const DeviceStepBuffer* buffer, const DeviceStepBuffer* next) const;

  // The time bound on one step's wait: `awaiting` says whether `step` (the
  // oldest open one) waits for this device now. Returns true when the wait
  // started at an earlier call reached `wait_ns` at `now_ns`: the step, and
  // those before it, wait no more.
  bool BoundWait(uint64_t step, bool awaiting, int64_t now_ns, int64_t wait_ns);

  bool gpu() const { return gpu_; }  // delivered GPU work, or expected to
  int64_t max_launch_ns() const { return max_launch_ns_; }

 private:
  bool gpu_ = false;
  bool seen_ = false;  // delivered GPU work
  // Per stream, the latest launch delivered.
  absl::flat_hash_map<uint64_t, int64_t> stream_launch_;
  int64_t max_launch_ns_ = std::numeric_limits<int64_t>::min();
  bool waiting_ = false;
  uint64_t wait_step_ = 0;
  int64_t wait_since_ns_ = 0;
  int64_t released_through_ = -1;  // steps no longer waiting for GPU work
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_GPU_WORK_PROGRESS_H_

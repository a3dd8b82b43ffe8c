// Assembles training steps across the devices of a job: buffers each
// device's events per step (cheaply, on the device's own clock) and, once
// every live device has reported the end of a step, aligns the step onto the
// reference clock and derives its StepReport (per device, per link, per
// pipeline stage) and its operators.
//
// Step numbering: step N of a device runs from its STEP_MARK with value N to
// its STEP_MARK with value N+1. Events before a device's first mark (value N)
// belong to step N-1 (the PyTorch plugin marks 1, 2, ... after each optimizer
// step, so its first step is 0); they are dropped when N is 0 or step N-1 has
// closed already. PHASE_MARKs go to the step their value names while that step
// is still open; a "memory.peak_bytes" counter stamped at a step mark's
// instant belongs to the step that ended there (the plugin records it right
// after the mark).
//
// Closing: the lowest open step closes when every live device (opened, not
// closed, not silent) has passed it: sent a later mark and, when that mark
// ended this step, some event after the mark's own trailing counters and
// phases (so the step's memory peak is in). A device is silent
// after `silent_after_ns` without events (measured on Tick's collector time);
// a closed or silent device does not block: it appears in missing_ranks, or
// with complete=false when it has events in the step. Until as many devices
// as the job's world size (ExpectDevices) have appeared, no step closes: a
// rank that attaches a few steps late still has its first steps in the
// reports. The wait ends after `silent_after_ns` (of Tick's time) in case
// a rank never comes. Beyond max_open_steps or
// max_buffered_events the oldest step is force-closed (counted); a device
// still inside it drops its events until its next mark.
//
// GPU work (kernels, NCCL kernels, copies, memsets) belongs to the step
// whose CPU launch made it: the step of the device whose marks enclose the
// event's launch_ns (its start when the launch is unknown), whenever it
// arrives. A kernel may run, and be reported, long after the host passed
// the next mark, so a step of a GPU device (one that delivered GPU work or
// said it has GPUs, ExpectGpu) also waits until each GPU stream that ran its
// work has delivered work launched after the step's end (a stream runs its
// work in launch order), or any stream delivered work launched after the
// next step's end, or it waited `gpu_wait_ns` of Tick's time (then a device
// that never delivered GPU work stops being waited for); max_open_steps and
// max_buffered_events bound it as they bound every wait. The host's sync
// runtime calls and data-wait phases are kept to say why the device idled.
// Host collectives and NCCL kernels are matched separately (two
// CollectiveMatchers): each instance is counted once per kind.
//
// Deciding when a step closes leans on three collaborators: DeviceLiveness
// (whether a device is live and heard from), GpuWorkProgress (whether a
// device delivered a step's GPU work) and WorldSizeWait (whether devices the
// job has are still to appear). Closing a step is three others' work:
// CollectiveMatcher matches each communication operator with its instance's
// other arrivals (waits, lateness, links), DeviceStepSummarizer derives each
// device's metrics and aligned operators, StepReportBuilder puts the report
// together. This class buffers the events by step and device and decides
// when a step closes.
//
// Usage:
//   StepAssembler assembler(&strings, &groups, &aligner, {},
//                           [&](ClosedStep&& s) { store.Insert(std::move(s.operators)); });
//   assembler.OnDeviceOpened(rank);
//   assembler.Add(rank, event);      // in each rank's order
//   assembler.Tick(now_unix_ns);     // now and then: silence timeouts
//   assembler.OnDeviceClosed(rank);
//
// Threading: not thread-safe; owned by the job's analysis thread. The sink
// runs on the calling thread, inside Add/Tick/OnDeviceClosed/Flush.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_ASSEMBLER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_ASSEMBLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "trainscope/collector/analysis/collective_matcher.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/device_liveness.h"
#include "trainscope/collector/analysis/device_step_buffer.h"
#include "trainscope/collector/analysis/device_step_summarizer.h"
#include "trainscope/collector/analysis/gpu_work_progress.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/collector/analysis/step_buffer_pool.h"
#include "trainscope/collector/analysis/world_size_wait.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

struct StepAssemblerOptions {
  // A live device without events for this long stops blocking step closes.
  int64_t silent_after_ns = 10'000'000'000;
  // Open steps held at most; beyond, the oldest is force-closed.
  size_t max_open_steps = 16;
  // Events buffered in open steps at most (about 56 bytes each).
  size_t max_buffered_events = 8'000'000;
  // Events of one device in one step at most; the rest are dropped.
  size_t max_events_per_device_step = 2'000'000;
  // Collective instances still incomplete this many steps after their first
  // arrival are forgotten (a member that never reports them).
  uint64_t instance_retention_steps = 8;
  // A step waits at most this long (Tick's time) for a GPU device's work
  // once the device's host has passed it.
  int64_t gpu_wait_ns = 2'000'000'000;
  // Derives each step's per-pair traffic (StepReport.traffic) with this
  // model; null: none. Must outlive the assembler.
  const TrafficModel* traffic_model = nullptr;
};

struct StepAssemblerStats {
  uint64_t steps_closed = 0;            // forced ones included
  uint64_t steps_forced = 0;            // closed by the memory bounds
  uint64_t events_late = 0;             // for a step that had closed, or a device in no step
  uint64_t events_dropped = 0;          // beyond max_events_per_device_step/max_buffered_events
  uint64_t marks_out_of_order = 0;      // step marks not above the device's current step
  uint64_t collectives_incomplete = 0;  // waits computed before every participant arrived
  uint64_t gpu_waits_timed_out = 0;     // steps that stopped waiting for GPU work (gpu_wait_ns)
  uint64_t buffered_events = 0;         // now
  uint64_t open_steps = 0;              // now
};

// One closed step: the report and the step's operators on the reference
// clock, ordered by rank then by arrival.
struct ClosedStep {
  trainscope::v1::StepReport report;
  std::vector<OperatorRecord> operators;
  bool forced = false;
};

using StepSink = std::function<void(ClosedStep&&)>;

class StepAssembler {
 public:
  // All pointers must outlive the assembler.
  StepAssembler(const JobStrings* strings, GroupDirectory* groups, const ReferenceClock* clock,
                StepAssemblerOptions options, StepSink sink);
  ~StepAssembler();
  StepAssembler(const StepAssembler&) = delete;
  StepAssembler& operator=(const StepAssembler&) = delete;

  void OnDeviceOpened(uint32_t rank);
  // `rank` has GPUs (Hello.gpus): its steps wait for their GPU work even
  // before its first GPU event arrives (an import delivers a trace's GPU
  // work after all of its host's events).
  void ExpectGpu(uint32_t rank);
  // The job has `world_size` devices (Hello.world_size): steps wait for them.
  void ExpectDevices(uint32_t world_size);
  void OnDeviceClosed(uint32_t rank);
  // One event of `rank`, in that rank's order. Cheap: buffers; the work
  // happens when a step closes.
  void Add(uint32_t rank, const DeviceEvent& event);
  // The same as Add for each of `events` in turn, cheaper per event.
  void Add(uint32_t rank, absl::Span<const DeviceEvent> events);
  // The end of one batch of `rank`. Once called, a device passes a step only
  // a whole batch after the one holding its end mark (events of other
  // threads from before the mark may trail it); without batch ends, its
  // first event after the mark is enough.
  void OnBatchEnd(uint32_t rank);
  // Collector time, for silence timeouts; closes what became closable.
  void Tick(int64_t now_unix_ns);
  // Closes every open step now (end of a replay, shutdown).
  void Flush();

  // Storage of an earlier ClosedStep::operators that its owner is done with
  // (an evicted step): the next closed step fills it instead of new memory.
  void Recycle(std::vector<OperatorRecord>&& storage);

  StepAssemblerStats stats() const;
  // The highest closed step, or -1 when none closed yet.
  int64_t last_closed_step() const { return closed_through_; }

 private:
  // Assembly state of one device (step_assembler.cc): where it is (its
  // marks and open steps' spans), its liveness, its GPU work's progress and
  // its open operators (OperatorPairer).
  struct Device;
  // The devices' buffers of one open step, by rank.
  struct OpenStep {
    std::vector<std::unique_ptr<DeviceStepBuffer>> buffers;
  };

  // Per event: the common case stays inline.
  Device& DeviceFor(uint32_t rank) {
    if (rank < devices_.size() && devices_[rank] != nullptr) [[likely]] {
      return *devices_[rank];
    }
    return NewDevice(rank);
  }
  Device& NewDevice(uint32_t rank);
  void AddTo(uint32_t rank, Device& d, const DeviceEvent& e);
  void RefreshCounterNames();
  void OnCounter(Device& d, const DeviceEvent& e);
  void OnPhase(Device& d, const DeviceEvent& e);
  void OnStepMark(uint32_t rank, Device& d, const DeviceEvent& e);
  void OnOperatorEnd(Device& d, const DeviceEvent& e);
  void OnHostSync(Device& d, const DeviceEvent& e);
  void OnGpuWork(uint32_t rank, Device& d, const DeviceEvent& e);
  // The open step whose launches made work launched `at`, and its number.
  DeviceStepBuffer* GpuBufferFor(const Device& d, int64_t at, uint64_t* step) const;
  // Buffers `e` in `b`, counting it.
  void Place(DeviceStepBuffer* b, const DeviceEvent& e);
  // Moves what `from` holds from `at` on into `to`.
  void MoveFrom(DeviceStepBuffer* from, int64_t at, DeviceStepBuffer* to);
  // Whether `d` (of `rank`) holds `step` open for GPU work still to come.
  bool AwaitsGpuWork(uint32_t rank, const Device& d, uint64_t step) const;
  bool PassedOnHost(const Device& d, uint64_t step) const;
  void Push(Device& d, const DeviceEvent& e);
  void NoteArrival(uint32_t rank, Device& d, const DeviceEvent& e);
  DeviceStepBuffer* BufferFor(uint64_t step, uint32_t rank);
  bool Blocks(uint32_t rank, const Device& d, uint64_t step) const;
  void TryClose();
  // Ends GPU waits older than gpu_wait_ns.
  void BoundGpuWaits(int64_t now_unix_ns);
  void EnforceBounds();
  void CloseOldest(bool forced);
  uint32_t KnownDevices() const;
  bool AwaitingDevices() const;

  const JobStrings* const strings_;
  const StepAssemblerOptions options_;
  StepSink sink_;

  std::vector<std::unique_ptr<Device>> devices_;  // by rank
  std::map<uint64_t, OpenStep> open_;
  int64_t closed_through_ = -1;
  // The wait for devices the job has but that did not appear yet; over
  // after silent_after_ns.
  WorldSizeWait world_size_wait_;
  CollectiveMatcher matcher_;      // host collectives
  CollectiveMatcher gpu_matcher_;  // NCCL kernels
  DeviceStepSummarizer summarizer_;

  StepBufferPool pool_;  // closed steps' memory, for the next ones (see Recycle)
  uint64_t buffered_events_ = 0;

  size_t strings_seen_ = 0;
  uint32_t flops_name_ = 0;
  uint32_t peak_memory_name_ = 0;
  uint32_t stage_name_ = 0;

  bool batch_boundaries_ = false;  // OnBatchEnd has been called
  StepAssemblerStats stats_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_ASSEMBLER_H_

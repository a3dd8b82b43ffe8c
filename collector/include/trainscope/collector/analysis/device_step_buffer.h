// One device's share of one open step, as StepAssembler buffers it on the
// device's own clock (cheaply: the work happens when the step closes) and
// DeviceStepSummarizer reads it when the step closes.
//
// Usage:
//   DeviceStepBuffer b;
//   b.events.push_back(operator_event);  // CPU operators and GPU work
//   ...
//   b.Reset();  // for the next step, keeping the events' storage
//
// Threading: plain value type.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_BUFFER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_BUFFER_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "trainscope/collector/analysis/device_event.h"

namespace trainscope::collector {

struct DeviceStepBuffer {
  // A time interval on the device's own clock.
  struct RawInterval {
    int64_t start_ns;
    int64_t end_ns;
  };
  // Host intervals kept per step at most (sync calls, data waits).
  static constexpr size_t kMaxHostIntervals = 4096;

  // OPERATOR and COLLECTIVE events of the host, and the GPU work (kinds
  // GPU_KERNEL .. GPU_COLLECTIVE) its launches in this step made, in arrival
  // order. For operators, group_sequence carries the FLOPs of their "flops"
  // counter.
  std::vector<DeviceEvent> events;
  uint32_t gpu_events = 0;
  uint32_t gpu_collectives = 0;
  // The GPU streams of its GPU work (gpu_device << 32 | gpu_stream): the
  // step waits until each has delivered work launched after it.
  std::vector<uint64_t> gpu_streams;
  // The host's sync runtime calls (RUNTIME_CALL_SYNC) and DATA_WAIT phases:
  // why the device idled.
  std::vector<RawInterval> host_syncs;
  std::vector<RawInterval> data_waits;
  int64_t start_raw_ns = 0;  // the step mark that began the step
  int64_t end_raw_ns = 0;    // the step mark that ended it
  bool has_start = false;
  bool ended = false;
  std::array<int64_t, 5> phase_ns{};  // by v1::Phase
  std::array<bool, 5> phase_seen{};
  uint64_t flops = 0;
  uint64_t peak_memory = 0;

  // Notes a GPU event's stream (few per step: a linear scan).
  void NoteGpuStream(uint64_t stream) {
    if (std::find(gpu_streams.begin(), gpu_streams.end(), stream) == gpu_streams.end()) {
      gpu_streams.push_back(stream);
    }
  }

  // Back to a fresh buffer, keeping the events' capacity for reuse.
  void Reset() {
    std::vector<DeviceEvent> kept = std::move(events);
    kept.clear();
    *this = DeviceStepBuffer();
    events = std::move(kept);
  }
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_BUFFER_H_

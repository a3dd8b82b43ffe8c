// One device's share of one open step, as StepAssembler buffers it on the
// device's own clock (cheaply: the work happens when the step closes) and
// DeviceStepSummarizer reads it when the step closes.
//
// Usage:
//   DeviceStepBuffer b;
//   b.events.push_back(operator_event);  // OPERATOR and COLLECTIVE only
//   ...
//   b.Reset();  // for the next step, keeping the events' storage
//
// Threading: plain value type.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_BUFFER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_STEP_BUFFER_H_

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "trainscope/collector/analysis/device_event.h"

namespace trainscope::collector {

struct DeviceStepBuffer {
  // OPERATOR and COLLECTIVE events, in arrival order. For operators,
  // group_sequence carries the FLOPs of their "flops" counter.
  std::vector<DeviceEvent> events;
  int64_t start_raw_ns = 0;  // the step mark that began the step
  int64_t end_raw_ns = 0;    // the step mark that ended it
  bool has_start = false;
  bool ended = false;
  std::array<int64_t, 5> phase_ns{};  // by v1::Phase
  std::array<bool, 5> phase_seen{};
  uint64_t flops = 0;
  uint64_t peak_memory = 0;

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

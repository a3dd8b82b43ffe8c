// Pairs a device's OPERATOR_BEGIN and OPERATOR_END events into OPERATOR
// events: an end closes the innermost open begin of the same thread (nested
// operators end inside out), taking the end's name when the begin had none.
// At most kMaxOpen begins wait for their ends: an agent that lost ends must
// not grow this without bound; a begin beyond that, or an end without a
// begin, is dropped (the caller counts it).
//
// Usage (StepAssembler, per device):
//   OperatorPairer pairer;
//   if (!pairer.Begin(e)) ++dropped;
//   if (std::optional<DeviceEvent> op = pairer.End(e)) Push(*op); else ++dropped;
//   pairer.Clear();  // the device's stream closed
//
// Threading: not thread-safe; owned by the job's analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_PAIRER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_PAIRER_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "trainscope/collector/analysis/device_event.h"

namespace trainscope::collector {

class OperatorPairer {
 public:
  // OPERATOR_BEGIN events held at most.
  static constexpr size_t kMaxOpen = 256;

  // Holds `begin` until its end; false (not held) when kMaxOpen are open.
  bool Begin(const DeviceEvent& begin) {
    if (open_.size() >= kMaxOpen) return false;
    open_.push_back(begin);
    return true;
  }
  // The operator `end` closes, or nullopt when its thread has none open.
  std::optional<DeviceEvent> End(const DeviceEvent& end);
  // Forgets every open begin.
  void Clear() { open_.clear(); }
  size_t open() const { return open_.size(); }

 private:
  std::vector<DeviceEvent> open_;  // in arrival order
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_PAIRER_H_

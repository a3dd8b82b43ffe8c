// Whether a device can hold up a step's close: it does while it is live
// (opened, not closed) and not silent. A device is silent once it sent
// nothing for silent_after_ns of the collector's time, measured between
// Ticks (its own clock says nothing of whether it is still there); its next
// event makes it heard again.
//
// Usage (StepAssembler, per device):
//   DeviceLiveness liveness;
//   liveness.OnEvent();                          // per event: cheap
//   liveness.Tick(now_unix_ns, silent_after_ns); // now and then
//   if (liveness.CanBlock()) ...
//
// Threading: not thread-safe; owned by the job's analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_LIVENESS_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_LIVENESS_H_

#include <cstdint>

namespace trainscope::collector {

class DeviceLiveness {
 public:
  // The device's stream opened (again): live, and its silence clock restarts
  // at the next Tick.
  void OnOpened() {
    live_ = true;
    silent_ = false;
    ticked_ = false;
  }
  void OnClosed() { live_ = false; }
  // An event arrived since the last Tick.
  void OnEvent() { active_ = true; }
  // Collector time: the device is silent when no event came for silent_after_ns.
  void Tick(int64_t now_unix_ns, int64_t silent_after_ns);

  bool live() const { return live_; }
  bool silent() const { return silent_; }
  // Live and not silent: a step waits for it.
  bool CanBlock() const { return live_ && !silent_; }

 private:
  bool live_ = true;
  bool silent_ = false;
  bool active_ = false;  // an event since the last Tick
  bool ticked_ = false;  // last_seen_ns_ is set
  int64_t last_seen_ns_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_LIVENESS_H_

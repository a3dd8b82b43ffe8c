// The fallback of a halt: if the training loop does not reach the halting
// step boundary within the grace period, the process gets SIGTERM.
//
// Usage:
//   HaltWatchdog watchdog;
//   watchdog.Arm(now_ns + grace_ns);           // the halt arrived (agent thread)
//   watchdog.Disarm();                          // boundary reached (training thread)
//   if (watchdog.Expired(Agent::Now())) kill(getpid(), SIGTERM);  // control thread
//
// Passive (no thread of its own): the session's control thread polls it, so
// it can be tested without signals or sleeping.
//
// Threading: every method from any thread (atomics).
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_HALT_WATCHDOG_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_HALT_WATCHDOG_H_

#include <atomic>
#include <cstdint>

namespace trainscope::pytorch {

class HaltWatchdog {
 public:
  // Arms with `deadline_ns` unless armed already (the first halt's clock
  // counts) or disarmed for good by a reached boundary.
  void Arm(int64_t deadline_ns);
  // The halting boundary was reached: never fires afterwards.
  void Disarm();
  // True exactly once: the first call at or after the deadline while armed.
  bool Expired(int64_t now_ns);

  bool armed() const { return state_.load(std::memory_order_acquire) == kArmed; }

 private:
  static constexpr int kIdle = 0, kArmed = 1, kDone = 2;
  std::atomic<int> state_{kIdle};
  std::atomic<int64_t> deadline_ns_{0};
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_HALT_WATCHDOG_H_

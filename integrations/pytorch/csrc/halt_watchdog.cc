#include "halt_watchdog.h"

namespace trainscope::pytorch {

void HaltWatchdog::Arm(int64_t deadline_ns) {
  int expected = kIdle;
  deadline_ns_.store(deadline_ns, std::memory_order_relaxed);
  state_.compare_exchange_strong(expected, kArmed, std::memory_order_acq_rel);
}

void HaltWatchdog::Disarm() { state_.store(kDone, std::memory_order_release); }

bool HaltWatchdog::Expired(int64_t now_ns) {
  if (state_.load(std::memory_order_acquire) != kArmed) return false;
  if (now_ns < deadline_ns_.load(std::memory_order_relaxed)) return false;
  int expected = kArmed;
  return state_.compare_exchange_strong(expected, kDone, std::memory_order_acq_rel);
}

}  // namespace trainscope::pytorch

#include "pacer.h"

namespace trainscope::loadgen {

Pacer::Pacer(double rate, absl::Time start, absl::Duration max_lag)
    : paced_(rate > 0),
      interval_(rate > 0 ? absl::Seconds(1.0 / rate) : absl::ZeroDuration()),
      max_lag_(max_lag),
      next_due_(start) {}

absl::Duration Pacer::Wait(absl::Time now) {
  if (!paced_) return absl::ZeroDuration();
  next_due_ += interval_;
  if (now - next_due_ > max_lag_) {
    next_due_ = now - max_lag_;
    ++slips_;
  }
  return next_due_ > now ? next_due_ - now : absl::ZeroDuration();
}

}  // namespace trainscope::loadgen

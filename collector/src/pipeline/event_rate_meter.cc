#include "trainscope/collector/pipeline/event_rate_meter.h"

namespace trainscope::collector {

void EventRateMeter::Sample(absl::Time now, uint64_t events) {
  samples_.emplace_back(now, events);
  while (samples_.size() > 1 && now - samples_.front().first > kWindow) samples_.pop_front();
  const double seconds = absl::ToDoubleSeconds(now - samples_.front().first);
  events_per_second_ =
      seconds > 0 ? static_cast<double>(events - samples_.front().second) / seconds : 0;
}

}  // namespace trainscope::collector

// A job's event rate (JobSummary.events_per_second): the events received
// over the last few seconds of samples, so that the figure follows the job
// without jumping with each batch.
//
// Usage:
//   EventRateMeter rate;
//   rate.Sample(now, events_received_so_far);  // at each summary
//   summary.set_events_per_second(rate.events_per_second());
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_EVENT_RATE_METER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_EVENT_RATE_METER_H_

#include <cstdint>
#include <deque>
#include <utility>

#include "absl/time/time.h"

namespace trainscope::collector {

class EventRateMeter {
 public:
  // Samples older than this (but the newest) are dropped.
  static constexpr absl::Duration kWindow = absl::Seconds(5);

  // `events`: the running total received at `now` (never decreasing).
  // Updates the rate over the window's oldest sample to this one.
  void Sample(absl::Time now, uint64_t events);
  // 0 until two samples apart in time.
  double events_per_second() const { return events_per_second_; }

 private:
  std::deque<std::pair<absl::Time, uint64_t>> samples_;
  double events_per_second_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_EVENT_RATE_METER_H_

// A job's event rate (JobSummary.events_per_second): the events received
// over the last few seconds of samples, so that the figure follows the job
// without jumping with each batch. Once events stop the rate falls to 0
// within kWindow, but only as samples keep coming: until settled(), the
// owner must keep sampling (and publishing) although no counter moved, or a
// stalled job would show its last rate forever.
//
// Usage:
//   EventRateMeter rate;
//   rate.Sample(now, events_received_so_far);  // at each summary
//   summary.set_events_per_second(rate.events_per_second());
//   if (!rate.settled()) ...sample again after the summary interval...;
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
  // True when more samples of an unchanged total cannot change the rate:
  // it is 0. A nonzero rate falls to 0 within kWindow of the last event.
  bool settled() const { return events_per_second_ == 0; }

 private:
  std::deque<std::pair<absl::Time, uint64_t>> samples_;
  double events_per_second_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_EVENT_RATE_METER_H_

// When a job's pipeline publishes what changes often: rank counters at most
// once per rank_interval (coalesced, so that a busy job cannot flood the
// feed), the job summary at once when its state changed but counters only
// once per summary_interval, and clock probes once per probe_interval.
// While the job's event rate is still falling (events stopped, the rate has
// not reached 0) the summary is due once per summary_interval as if its
// counters moved, so that a stalled job's rate decays in the feed and stops
// being published once it reads 0.
//
// Usage (on each pass of the pipeline thread):
//   FeedFlushSchedule schedule({.rank_interval = ..., .summary_interval = ...,
//                               .probe_interval = ...});
//   schedule.MarkSummaryChanged();     // a state change: publish soon
//   schedule.MarkCountersChanged();    // counters moved: publish when due
//   schedule.SetRateMoving(!rate.settled());  // the rate still decays
//   FeedFlushSchedule::Due due = schedule.Take(now, force, ranks_changed);
//   if (due.ranks) ...publish the changed ranks...;
//   if (due.summary) ...publish the summary...;
//   if (schedule.ProbeDue(now, force)) ...send probes...;
//   wait until schedule.Next(ranks_changed, has_streams);
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_FEED_FLUSH_SCHEDULE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_FEED_FLUSH_SCHEDULE_H_

#include "absl/time/time.h"

namespace trainscope::collector {

class FeedFlushSchedule {
 public:
  struct Options {
    absl::Duration rank_interval = absl::Milliseconds(100);
    absl::Duration summary_interval = absl::Seconds(1);
    absl::Duration probe_interval = absl::Seconds(1);  // zero: no probes
  };
  // What to publish now.
  struct Due {
    bool ranks = false;    // the changed ranks (a rank flush)
    bool summary = false;  // the job summary (with the ranks)
  };

  explicit FeedFlushSchedule(Options options) : options_(options) {}

  // The job's state changed: the summary goes out at the next rank flush.
  void MarkSummaryChanged() { summary_changed_ = true; }
  // Its counters moved: the summary goes out once summary_interval passed.
  void MarkCountersChanged() { counters_changed_ = true; }
  // Whether the summary's event rate still changes without new events
  // (EventRateMeter::settled() is false): the summary then falls due once
  // per summary_interval, like moving counters, until this is cleared.
  void SetRateMoving(bool moving) { rate_moving_ = moving; }
  bool summary_changed() const { return summary_changed_; }

  // Decides what is due at `now` (everything pending, with `force`) and
  // starts the intervals of what it returns. `ranks_changed`: some rank has
  // changes to publish.
  Due Take(absl::Time now, bool force, bool ranks_changed);
  // Whether to probe the streams now (never with `force`: the pipeline is
  // stopping); starts the next probe interval when it is.
  bool ProbeDue(absl::Time now, bool force);
  // When something falls due next (InfiniteFuture: nothing pending).
  // `has_streams`: there are streams to probe.
  absl::Time Next(bool ranks_changed, bool has_streams) const;

 private:
  const Options options_;
  bool summary_changed_ = false;
  bool counters_changed_ = false;
  bool rate_moving_ = false;
  absl::Time next_rank_flush_ = absl::InfinitePast();
  absl::Time next_summary_flush_ = absl::InfinitePast();
  absl::Time next_probe_ = absl::InfinitePast();
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_FEED_FLUSH_SCHEDULE_H_

#include "trainscope/collector/pipeline/feed_flush_schedule.h"

#include <algorithm>

namespace trainscope::collector {

FeedFlushSchedule::Due FeedFlushSchedule::Take(absl::Time now, bool force, bool ranks_changed) {
  Due due;
  const bool summary_due = summary_changed_ || ((counters_changed_ || rate_moving_) &&
                                                (force || now >= next_summary_flush_));
  if ((!force && now < next_rank_flush_) || (!ranks_changed && !summary_due)) return due;
  // A summary goes out with a rank flush, so that a rank's counters and the
  // job's totals in the feed agree.
  due.ranks = true;
  next_rank_flush_ = now + options_.rank_interval;
  if (summary_due) {
    due.summary = true;
    summary_changed_ = false;
    counters_changed_ = false;
    next_summary_flush_ = now + options_.summary_interval;
  }
  return due;
}

bool FeedFlushSchedule::ProbeDue(absl::Time now, bool force) {
  if (options_.probe_interval <= absl::ZeroDuration() || force || now < next_probe_) return false;
  next_probe_ = now + options_.probe_interval;
  return true;
}

absl::Time FeedFlushSchedule::Next(bool ranks_changed, bool has_streams) const {
  absl::Time next = absl::InfiniteFuture();
  if (ranks_changed || summary_changed_) next = std::min(next, next_rank_flush_);
  if (counters_changed_ || rate_moving_)
    next = std::min(next, std::max(next_rank_flush_, next_summary_flush_));
  if (options_.probe_interval > absl::ZeroDuration() && has_streams) {
    next = std::min(next, next_probe_);
  }
  return next;
}

}  // namespace trainscope::collector

// Hands live updates from the feed thread to the UI thread without letting
// a fast feed outrun drawing: the UI takes everything pending once per frame
// (Take), so any number of updates costs one redraw. State that replaces
// itself (the job's summary) keeps only the newest value; data that adds up
// (steps, operators) is kept, but past `max_pending_operators` the oldest
// operator batches are dropped — the viewer skips to the newest — and
// everything skipped is counted. The loss-contribution list replaces itself
// too; item snapshots add up, past `max_pending_snapshots` the oldest go.
//
// Usage (feed thread):
//   FeedCoalescer::Delta delta;
//   delta.job = job_record;
//   coalescer.Post(std::move(delta));
// Usage (UI thread, each frame tick):
//   if (std::optional<FeedCoalescer::Delta> d = coalescer.Take()) Apply(*d);
//   coalescer.stats().states_skipped;  // shown in the status bar
//
// Threading: Post and Take may run on different threads (one mutex).
#ifndef TRAINSCOPE_VIEWER_FEED_COALESCER_H_
#define TRAINSCOPE_VIEWER_FEED_COALESCER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "trainscope/base/mutex.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class FeedCoalescer {
 public:
  struct Delta {
    std::optional<JobRecord> job;  // the newest state wins
    std::vector<StepRecord> steps;
    std::vector<OperatorBatchRecord> operator_batches;
    std::vector<Alert> alerts;
    std::vector<DeviceInfo> devices;
    std::vector<std::string> notices;  // for the status bar
    bool reset = false;                // a new snapshot: drop what was shown
    // Loss contribution: the newest list wins; an item's fetched snapshots
    // replace an older answer for the same item.
    std::optional<LossData> loss;
    std::vector<ItemSnapshotRecord> item_snapshots;  // live "<job>/maps"
  };
  struct Stats {
    uint64_t posts = 0;
    uint64_t takes = 0;
    uint64_t states_skipped = 0;     // job states replaced before drawn
    uint64_t updates_coalesced = 0;  // posts folded into an earlier pending one
    uint64_t batches_dropped = 0;    // operator batches skipped to catch up
    uint64_t operators_dropped = 0;
    uint64_t steps_dropped = 0;
    uint64_t snapshots_dropped = 0;  // item snapshots skipped to catch up
  };

  explicit FeedCoalescer(size_t max_pending_operators = 2'000'000,
                         size_t max_pending_steps = 10'000, size_t max_pending_snapshots = 4'096);

  void Post(Delta delta);
  // Everything posted since the last Take, or nullopt when nothing was.
  std::optional<Delta> Take();
  // Something was posted since the last Take.
  bool HasPending() const;
  Stats stats() const;

 private:
  mutable base::Mutex mu_;
  size_t max_pending_operators_;
  size_t max_pending_steps_;
  size_t max_pending_snapshots_;
  std::optional<Delta> pending_ ABSL_GUARDED_BY(mu_);
  size_t pending_operators_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_FEED_COALESCER_H_

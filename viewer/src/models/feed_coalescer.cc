#include "trainscope/viewer/feed_coalescer.h"

#include <iterator>

namespace trainscope::viewer {

FeedCoalescer::FeedCoalescer(size_t max_pending_operators, size_t max_pending_steps,
                             size_t max_pending_snapshots)
    : max_pending_operators_(max_pending_operators),
      max_pending_steps_(max_pending_steps),
      max_pending_snapshots_(max_pending_snapshots) {}

void FeedCoalescer::Post(Delta delta) {
  base::MutexLock lock(&mu_);
  ++stats_.posts;
  size_t operators = 0;
  for (const auto& batch : delta.operator_batches) operators += batch.operators.size();
  if (!pending_.has_value() || delta.reset) {
    // A reset makes everything pending before it moot.
    if (pending_.has_value()) {
      ++stats_.updates_coalesced;
      if (pending_->job.has_value()) ++stats_.states_skipped;
    }
    pending_ = std::move(delta);
    pending_operators_ = operators;
  } else {
    ++stats_.updates_coalesced;
    Delta& p = *pending_;
    if (delta.job.has_value()) {
      if (p.job.has_value()) ++stats_.states_skipped;
      p.job = std::move(delta.job);
    }
    std::move(delta.steps.begin(), delta.steps.end(), std::back_inserter(p.steps));
    std::move(delta.operator_batches.begin(), delta.operator_batches.end(),
              std::back_inserter(p.operator_batches));
    std::move(delta.alerts.begin(), delta.alerts.end(), std::back_inserter(p.alerts));
    std::move(delta.devices.begin(), delta.devices.end(), std::back_inserter(p.devices));
    std::move(delta.notices.begin(), delta.notices.end(), std::back_inserter(p.notices));
    if (delta.loss.has_value()) {
      if (!p.loss.has_value()) {
        p.loss = std::move(delta.loss);
      } else {
        if (delta.loss->state.has_value()) {
          if (p.loss->state.has_value()) ++stats_.states_skipped;
          p.loss->state = std::move(delta.loss->state);
        }
        for (auto& [item, snapshots] : delta.loss->snapshots) {
          p.loss->snapshots[item] = std::move(snapshots);
        }
      }
    }
    std::move(delta.item_snapshots.begin(), delta.item_snapshots.end(),
              std::back_inserter(p.item_snapshots));
    pending_operators_ += operators;
  }
  // Catch up: the newest operators matter, the oldest pending ones are
  // already out of date.
  Delta& p = *pending_;
  size_t drop = 0;
  while (pending_operators_ > max_pending_operators_ && drop + 1 < p.operator_batches.size()) {
    pending_operators_ -= p.operator_batches[drop].operators.size();
    stats_.operators_dropped += p.operator_batches[drop].operators.size();
    ++stats_.batches_dropped;
    ++drop;
  }
  p.operator_batches.erase(p.operator_batches.begin(),
                           p.operator_batches.begin() + static_cast<std::ptrdiff_t>(drop));
  if (p.steps.size() > max_pending_steps_) {
    const size_t excess = p.steps.size() - max_pending_steps_;
    stats_.steps_dropped += excess;
    p.steps.erase(p.steps.begin(), p.steps.begin() + static_cast<std::ptrdiff_t>(excess));
  }
  if (p.item_snapshots.size() > max_pending_snapshots_) {
    const size_t excess = p.item_snapshots.size() - max_pending_snapshots_;
    stats_.snapshots_dropped += excess;
    p.item_snapshots.erase(p.item_snapshots.begin(),
                           p.item_snapshots.begin() + static_cast<std::ptrdiff_t>(excess));
  }
}

std::optional<FeedCoalescer::Delta> FeedCoalescer::Take() {
  base::MutexLock lock(&mu_);
  if (!pending_.has_value()) return std::nullopt;
  ++stats_.takes;
  std::optional<Delta> out = std::move(pending_);
  pending_.reset();
  pending_operators_ = 0;
  return out;
}

bool FeedCoalescer::HasPending() const {
  base::MutexLock lock(&mu_);
  return pending_.has_value();
}

FeedCoalescer::Stats FeedCoalescer::stats() const {
  base::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace trainscope::viewer

#include "trainscope/collector/pipeline/rank_step_progress.h"

#include <algorithm>
#include <limits>

namespace trainscope::collector {

bool RankStepProgress::Note(uint32_t rank, const v1::EventBatch& batch) {
  // One pass over the kind and delta columns; the value column is read only
  // for step marks. A batch whose columns disagree was refused before here;
  // the bounds keep a bad one harmless all the same.
  const int n = std::min({batch.kind_size(), batch.value_size(), batch.start_delta_ns_size()});
  Rank* r = nullptr;
  int64_t start = batch.base_time_ns();
  for (int i = 0; i < n; ++i) {
    start += batch.start_delta_ns(i);
    if (batch.kind(i) != v1::EVENT_KIND_STEP_MARK) continue;
    const uint64_t step = batch.value(i);
    const bool first = r == nullptr && by_rank_.find(rank) == by_rank_.end();
    if (r == nullptr) r = &by_rank_[rank];
    r->highest = first ? step : std::max(r->highest, step);
    // Only marks that go forward time a step (a restarted loop counts anew).
    if (r->marks > 0) {
      const Mark& newest = r->recent[(r->marks - 1) % kRecentMarks];
      if (step <= newest.step || start < newest.time_ns) r->marks = 0;
    }
    r->recent[r->marks % kRecentMarks] = {step, start};
    ++r->marks;
  }
  return r != nullptr;
}

uint64_t RankStepProgress::LastStepOf(uint32_t rank) const {
  auto it = by_rank_.find(rank);
  return it == by_rank_.end() ? 0 : it->second.highest;
}

uint64_t RankStepProgress::Highest() const {
  uint64_t highest = 0;
  for (const auto& [rank, r] : by_rank_) highest = std::max(highest, r.highest);
  return highest;
}

std::optional<uint64_t> RankStepProgress::HighestOfOthers(uint32_t rank) const {
  std::optional<uint64_t> highest;
  for (const auto& [other, r] : by_rank_) {
    if (other != rank) highest = std::max(highest.value_or(0), r.highest);
  }
  return highest;
}

int64_t RankStepProgress::ShortestStepNs() const {
  int64_t shortest = std::numeric_limits<int64_t>::max();
  for (const auto& [rank, r] : by_rank_) {
    if (r.marks < 2) continue;
    const size_t held = std::min(r.marks, kRecentMarks);
    const Mark& oldest = r.recent[(r.marks - held) % kRecentMarks];
    const Mark& newest = r.recent[(r.marks - 1) % kRecentMarks];
    const int64_t per_step =
        (newest.time_ns - oldest.time_ns) / static_cast<int64_t>(newest.step - oldest.step);
    shortest = std::min(shortest, per_step);
  }
  return shortest == std::numeric_limits<int64_t>::max() ? 0 : shortest;
}

}  // namespace trainscope::collector

#include "trainscope/collector/pipeline/rank_step_progress.h"

#include <algorithm>

namespace trainscope::collector {

bool RankStepProgress::Note(uint32_t rank, const v1::EventBatch& batch) {
  // One pass over the kind column; the value column is read only for step marks.
  const int n = std::min(batch.kind_size(), batch.value_size());
  bool seen = false;
  uint64_t highest = 0;
  for (int i = 0; i < n; ++i) {
    if (batch.kind(i) != v1::EVENT_KIND_STEP_MARK) continue;
    highest = seen ? std::max(highest, batch.value(i)) : batch.value(i);
    seen = true;
  }
  if (!seen) return false;
  auto [it, inserted] = by_rank_.emplace(rank, highest);
  if (!inserted) it->second = std::max(it->second, highest);
  return true;
}

uint64_t RankStepProgress::LastStepOf(uint32_t rank) const {
  auto it = by_rank_.find(rank);
  return it == by_rank_.end() ? 0 : it->second;
}

uint64_t RankStepProgress::Highest() const {
  uint64_t highest = 0;
  for (const auto& [rank, step] : by_rank_) highest = std::max(highest, step);
  return highest;
}

}  // namespace trainscope::collector

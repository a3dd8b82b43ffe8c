#include "trainscope/viewer/range_stats_model.h"

#include <algorithm>

namespace trainscope::viewer {

void RangeStatsModel::SelectSteps(uint64_t first, uint64_t last) {
  const StepSpan span{std::min(first, last), std::max(first, last)};
  if (span_ == span) return;
  span_ = span;
  ++version_;
}

bool RangeStatsModel::SelectTimeRange(const std::map<uint64_t, StepRecord>& steps, int64_t t0,
                                      int64_t t1) {
  std::optional<StepSpan> span = RangeStatistics::StepsInTimeRange(steps, t0, t1);
  if (!span.has_value()) return false;
  SelectSteps(span->first, span->last);
  return true;
}

void RangeStatsModel::Clear() {
  if (!span_.has_value()) return;
  span_.reset();
  ++version_;
}

bool RangeStatsModel::Update(const MareyTrackStore& store, const NameTable& names, int64_t now_ns) {
  const DataKey data{store.data_version(), store.steps().size(),
                     store.steps().empty() ? 0 : store.steps().rbegin()->first};
  const bool range_changed = !computed_ || computed_span_ != span_;
  const bool data_changed = data != computed_data_;
  if (!range_changed && !(data_changed && now_ns - computed_at_ns_ >= kLiveRefreshNs)) {
    return false;
  }
  statistics_ = RangeStatistics::Compute(store, span_);
  top_.Compute(store, names, span_, statistics_.total.wall_ns);
  computed_ = true;
  computed_span_ = span_;
  computed_data_ = data;
  computed_at_ns_ = now_ns;
  ++version_;
  return true;
}

std::optional<std::pair<int64_t, int64_t>> RangeStatsModel::marked_time_range() const {
  if (!span_.has_value() || !computed_ || computed_span_ != span_ || statistics_.empty) {
    return std::nullopt;
  }
  return std::make_pair(statistics_.start_ns, statistics_.end_ns);
}

}  // namespace trainscope::viewer

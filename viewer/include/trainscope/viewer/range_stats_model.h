// The range of steps the statistics panel describes and what it shows for
// it: a step range picked in the overview or the steps a time range dragged
// in the Marey graph covers (RangeStatistics::StepsInTimeRange), or none
// (the whole loaded job); its per-device statistics (RangeStatistics) and
// top operators (TopOperators), recomputed at once when the range changes
// and, as a live job's data arrives, at most every kLiveRefreshNs and never
// more than kMaxCpuShare of the time (the whole job's operators are
// millions, and the viewer runs beside training).
//
// Usage:
//   RangeStatsModel stats;
//   stats.SelectTimeRange(marey.store().steps(), t0, t1);  // a shift-drag
//   if (stats.Update(marey.store(), names, now_ns)) panel.Refresh();
//   stats.statistics().total.compute_ns; stats.top().rows();
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_RANGE_STATS_MODEL_H_
#define TRAINSCOPE_VIEWER_RANGE_STATS_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/range_statistics.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/top_operators.h"

namespace trainscope::viewer {

class RangeStatsModel {
 public:
  static constexpr int64_t kLiveRefreshNs = 2'000'000'000;
  static constexpr double kMaxCpuShare = 0.05;

  // Steps first..last (either order).
  void SelectSteps(uint64_t first, uint64_t last);
  // The steps [t0, t1] covers on the aligned clock; false (and nothing
  // changed) when no step overlaps it.
  bool SelectTimeRange(const std::map<uint64_t, StepRecord>& steps, int64_t t0, int64_t t1);
  // Back to the whole loaded job.
  void Clear();

  // Recomputes what changed: the range at once, new data (operators or
  // steps) after kLiveRefreshNs of `now_ns` and 1 / kMaxCpuShare times as
  // long as the last computation took. Returns whether the figures changed.
  bool Update(const MareyTrackStore& store, const NameTable& names, int64_t now_ns);

  std::optional<StepSpan> span() const { return span_; }
  const RangeStatistics::Result& statistics() const { return statistics_; }
  TopOperators& top() { return top_; }
  const TopOperators& top() const { return top_; }
  // The selected steps' extent on the aligned clock (for the Marey graph's
  // band); nullopt without a selection or before Update.
  std::optional<std::pair<int64_t, int64_t>> marked_time_range() const;
  // Changes whenever the range or the figures change.
  uint64_t version() const { return version_; }

  // What the panel shows, as text (the widget only lays it out): a title
  // naming the range, the per-device table (a row per device, then the
  // total) and the top operators' rows, columns as TopOperators::Column.
  std::string Title() const;
  static const std::vector<std::string>& DeviceHeaders();
  std::vector<std::vector<std::string>> DeviceCells() const;
  static const std::vector<std::string>& OperatorHeaders();
  static std::vector<std::string> OperatorCells(const TopOperators::Row& row);

 private:
  // What the figures were computed from: the store's operators and steps.
  using DataKey = std::tuple<uint64_t, size_t, uint64_t>;

  std::optional<StepSpan> span_;
  std::optional<StepSpan> computed_span_;
  bool computed_ = false;
  DataKey computed_data_{};
  int64_t computed_at_ns_ = 0;
  int64_t compute_cost_ns_ = 0;  // the last computation's wall time
  RangeStatistics::Result statistics_;
  TopOperators top_;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_RANGE_STATS_MODEL_H_

// The operators of a range of steps (or the whole loaded job) aggregated by
// name and class: calls, total and self time, mean, p50 and p95 of a call,
// the share of the range's device time spent in them (self), sortable by
// any column. Self time is an operator's time minus its children's: the
// operators wholly inside it on the same row (a device's CPU operators, or
// one GPU stream), the direct children's union, so nested calls are not
// counted twice and shares of a row add up to at most 100 %.
//
// Usage:
//   TopOperators top;
//   top.Compute(store, names, span, /*range_device_ns=*/stats.total.wall_ns);
//   top.SortBy(TopOperators::Column::kSelf, /*descending=*/true);
//   for (const TopOperators::Row& row : top.rows()) ...
//
// Threading: not thread-safe; the UI thread owns it (Compute reads the store).
#ifndef TRAINSCOPE_VIEWER_TOP_OPERATORS_H_
#define TRAINSCOPE_VIEWER_TOP_OPERATORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/range_statistics.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class TopOperators {
 public:
  struct Row {
    std::string name;
    uint32_t name_id = 0;  // NameTable id
    OpClass op_class = OpClass::kCompute;
    uint64_t calls = 0;
    std::vector<uint32_t> ranks;  // the devices that ran it, ascending
    int64_t total_ns = 0;
    int64_t self_ns = 0;
    double mean_ns = 0;
    double p50_ns = 0;  // of one call's duration (base::Quantile)
    double p95_ns = 0;
    double share = 0;  // self_ns / the range's device time; 0 when that is unknown
  };
  enum class Column { kName, kClass, kCalls, kRanks, kTotal, kSelf, kMean, kP50, kP95, kShare };

  // Aggregates the operators of `span`'s steps (nullopt: every operator)
  // over every device, then sorts by the current column.
  void Compute(const MareyTrackStore& store, const NameTable& names, std::optional<StepSpan> span,
               int64_t range_device_ns);
  void SortBy(Column column, bool descending);

  // Each operator's self time: its duration minus the union of its direct
  // children (operators wholly inside it) among `ops`, one row's operators
  // in any order; parallel to `ops`.
  static std::vector<int64_t> SelfTimes(const std::vector<const MareyTrack::Op*>& ops);

  const std::vector<Row>& rows() const { return rows_; }
  Column sort_column() const { return column_; }
  bool descending() const { return descending_; }
  // The first row of `name`, or -1.
  int Find(uint32_t name_id) const;

 private:
  std::vector<Row> rows_;
  Column column_ = Column::kSelf;
  bool descending_ = true;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_TOP_OPERATORS_H_

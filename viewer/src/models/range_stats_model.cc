#include "trainscope/viewer/range_stats_model.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trainscope/viewer/units.h"

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
  const int64_t wait_ns = std::max(
      kLiveRefreshNs, static_cast<int64_t>(static_cast<double>(compute_cost_ns_) / kMaxCpuShare));
  if (!range_changed && !(data_changed && now_ns - computed_at_ns_ >= wait_ns)) return false;
  const absl::Time started = absl::Now();
  statistics_ = RangeStatistics::Compute(store, span_);
  top_.Compute(store, names, span_, statistics_.total.wall_ns);
  compute_cost_ns_ = absl::ToInt64Nanoseconds(absl::Now() - started);
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

namespace {

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %%", 100 * fraction);
  return text;
}

// "12.5 ms (25%)": a part and its share of the device's wall time, in whole
// percent so eleven columns fit beside the operators ("<1%": some, not none).
std::string Share(int64_t ns, int64_t wall_ns) {
  const std::string duration = FormatDuration(static_cast<double>(ns));
  if (wall_ns <= 0) return duration;
  const double percent = 100.0 * static_cast<double>(ns) / static_cast<double>(wall_ns);
  char text[32];
  if (percent > 0 && percent < 0.5) {
    std::snprintf(text, sizeof(text), "<1%%");
  } else {
    std::snprintf(text, sizeof(text), "%.0f%%", percent);
  }
  return absl::StrCat(duration, " (", text, ")");
}

// The figures people compare first come first: the table is often wider
// than its half of the panel.
std::vector<std::string> PartCells(const RangeStatistics::Part& part) {
  return {part.rank.has_value() ? absl::StrCat("rank ", *part.rank) : "total",
          FormatDuration(static_cast<double>(part.wall_ns)),
          Share(part.compute_ns, part.wall_ns),
          Share(part.collective_wait_ns, part.wall_ns),
          Share(part.idle_ns, part.wall_ns),
          Share(part.data_wait_ns, part.wall_ns),
          Share(part.transfer_ns, part.wall_ns),
          part.has_gpu ? Share(part.kernel_ns, part.wall_ns) : "-",
          absl::StrCat(part.steps),
          absl::StrCat(part.operators),
          absl::StrCat(part.gpu_operators)};
}

}  // namespace

std::string RangeStatsModel::Title() const {
  const RangeStatistics::Result& r = statistics_;
  std::string range = r.first_step == r.last_step
                          ? absl::StrCat("step ", r.first_step)
                          : absl::StrCat("steps ", r.first_step, "\xE2\x80\x93", r.last_step);
  if (r.empty) {
    return r.whole_job ? "Whole job: no steps yet"
                       : absl::StrCat("Selected ", range, ": not loaded (no step held)");
  }
  return absl::StrCat(r.whole_job ? "Whole loaded job, " : "Selected ", range, " \xC2\xB7 ",
                      r.steps, r.steps == 1 ? " step" : " steps", " \xC2\xB7 ",
                      FormatDuration(static_cast<double>(r.end_ns - r.start_ns)), " \xC2\xB7 ",
                      r.ranks.size(), r.ranks.size() == 1 ? " device" : " devices");
}

const std::vector<std::string>& RangeStatsModel::DeviceHeaders() {
  static const std::vector<std::string> kHeaders = {"Device", "Wall",      "Compute",  "Coll. wait",
                                                    "Idle",   "Data wait", "Transfer", "Kernels",
                                                    "Steps",  "Operators", "GPU ops"};
  return kHeaders;
}

std::vector<std::vector<std::string>> RangeStatsModel::DeviceCells() const {
  std::vector<std::vector<std::string>> rows;
  for (const RangeStatistics::Part& part : statistics_.ranks) rows.push_back(PartCells(part));
  rows.push_back(PartCells(statistics_.total));
  return rows;
}

const std::vector<std::string>& RangeStatsModel::OperatorHeaders() {
  // In TopOperators::Column order.
  static const std::vector<std::string> kHeaders = {
      "Operator", "Class", "Calls", "Devices", "Total", "Self", "Mean", "p50", "p95", "Share"};
  return kHeaders;
}

std::vector<std::string> RangeStatsModel::OperatorCells(const TopOperators::Row& row) {
  return {row.name,
          OpClassName(row.op_class),
          absl::StrCat(row.calls),
          absl::StrCat(row.ranks.size()),
          FormatDuration(static_cast<double>(row.total_ns)),
          FormatDuration(static_cast<double>(row.self_ns)),
          FormatDuration(row.mean_ns),
          FormatDuration(row.p50_ns),
          FormatDuration(row.p95_ns),
          Percent(row.share)};
}

}  // namespace trainscope::viewer

#include "trainscope/viewer/marey_line_charts.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace trainscope::viewer {
namespace {

double Scaled(double v, double low, double high) {
  return high > low ? 0.15 + 0.85 * (v - low) / (high - low) : 0.5;
}

// Zoomed in: two points per step (a level across it), with neighbours that
// fall into one pixel column folded into one point.
void AddPoint(Polyline* line, float x, float y) {
  std::vector<PointF>& p = line->points;
  if (p.size() >= 2 && x - p[p.size() - 2].x < 1.0f && std::fabs(p.back().y - y) < 0.5f) {
    p.back().x = x;  // extend the level
    return;
  }
  if (!p.empty() && x - p.back().x < 1.0f) {
    p.back().y = std::max(p.back().y, y);  // same column: keep one point
    return;
  }
  p.push_back({x, y});
}

// Per pixel column: the steps' mean y (FLOPs: what the column did on
// average) and their highest point (peak memory: a peak stays a peak).
struct Column {
  double sum = 0;
  uint32_t count = 0;
  float top = 1e30f;

  void Add(float y) {
    sum += y;
    ++count;
    top = std::min(top, y);
  }
};

// One point per column that holds a step, at the column's centre.
void AddColumns(const std::vector<Column>& columns, float left, bool peak, Polyline* line) {
  for (size_t c = 0; c < columns.size(); ++c) {
    const Column& column = columns[c];
    if (column.count == 0) continue;
    const float y = peak ? column.top : static_cast<float>(column.sum / column.count);
    line->points.push_back({left + static_cast<float>(c) + 0.5f, y});
  }
}

}  // namespace

MareyLineCharts::MareyLineCharts(const MareyView& view, const std::map<uint64_t, StepRecord>& steps)
    : view_(view) {
  size_t visible = 0;
  // Which series each device slot of the previous step went to: steps list
  // their devices in the same order, so this almost never searches.
  std::vector<size_t> slot_series;
  for (const auto& [number, step] : steps) {
    const bool in_view = step.end_ns >= view_.start && step.start_ns <= view_.end;
    visible += in_view;
    // On the raw clocks each device's steps move by its own offset: Add
    // decides which are in view.
    const bool kept = in_view || view_.raw;
    if (slot_series.size() < step.devices.size()) slot_series.resize(step.devices.size(), 0);
    for (size_t slot = 0; slot < step.devices.size(); ++slot) {
      const DeviceStepRecord& d = step.devices[slot];
      const double flops = static_cast<double>(d.flops);
      const double memory = static_cast<double>(d.peak_memory_bytes);
      min_flops_ = std::min(min_flops_, flops);
      max_flops_ = std::max(max_flops_, flops);
      min_memory_ = std::min(min_memory_, memory);
      max_memory_ = std::max(max_memory_, memory);
      if (!kept) continue;
      size_t& index = slot_series[slot];
      if (index >= series_.size() || series_[index].rank != d.rank) {
        index = static_cast<size_t>(
            std::find_if(series_.begin(), series_.end(),
                         [&](const Series& series) { return series.rank == d.rank; }) -
            series_.begin());
        if (index == series_.size()) {
          series_.push_back({d.rank, {}});
          series_.back().values.reserve(steps.size());
        }
      }
      series_[index].values.push_back({d.start_ns, d.end_ns, flops, memory});
    }
  }
  aggregated_ = visible > 0 && view_.plot.w / static_cast<float>(visible) < kMinStepPx;
}

void MareyLineCharts::Add(uint32_t rank, int64_t shift, float base, float span,
                          DrawList* list) const {
  auto mine = std::find_if(series_.begin(), series_.end(),
                           [rank](const Series& series) { return series.rank == rank; });
  if (mine == series_.end()) return;
  const float left = view_.plot.x;
  const float right = view_.plot.x + view_.plot.w;
  Polyline flops{{}, kFlopsColor, aggregated_ ? kAggregatedWidth : kLineWidth};
  Polyline memory{{}, kMemoryColor, aggregated_ ? kAggregatedWidth : kLineWidth, true};
  std::vector<Column> flops_columns, memory_columns;
  if (aggregated_) {
    const size_t width = static_cast<size_t>(std::max(1.0f, std::ceil(view_.plot.w)));
    flops_columns.resize(width);
    memory_columns.resize(width);
  }
  auto column_of = [&](float x) {
    return std::min(static_cast<size_t>(std::max(0.0f, x - left)), flops_columns.size() - 1);
  };
  // MareyView::TimeToX's arithmetic, inlined: it runs twice per value.
  const double time_span = static_cast<double>(view_.end - view_.start);
  auto time_to_x = [&](int64_t t) {
    return left +
           static_cast<float>((static_cast<double>(t - view_.start) / time_span) * view_.plot.w);
  };
  auto y_of = [&](double v, double low, double high) {
    return base - span * static_cast<float>(Scaled(v, low, high));
  };
  for (const Value& v : mine->values) {
    if (v.end_ns + shift < view_.start || v.start_ns + shift > view_.end) continue;
    const float x0 = std::clamp(time_to_x(v.start_ns + shift), left, right);
    const float x1 = std::clamp(time_to_x(v.end_ns + shift), left, right);
    const float flops_y = y_of(v.flops, min_flops_, max_flops_);
    const float memory_y = y_of(v.memory, min_memory_, max_memory_);
    if (aggregated_) {
      // A step is narrower than a few pixels: it counts in every column it
      // touches (one or two).
      for (size_t c = column_of(x0), last = column_of(x1); c <= last; ++c) {
        flops_columns[c].Add(flops_y);
        memory_columns[c].Add(memory_y);
      }
      continue;
    }
    if (max_flops_ > 0) {
      AddPoint(&flops, x0, flops_y);
      AddPoint(&flops, x1, flops_y);
    }
    if (max_memory_ > 0) {
      AddPoint(&memory, x0, memory_y);
      AddPoint(&memory, x1, memory_y);
    }
  }
  if (aggregated_) {
    if (max_flops_ > 0) AddColumns(flops_columns, left, /*peak=*/false, &flops);
    if (max_memory_ > 0) AddColumns(memory_columns, left, /*peak=*/true, &memory);
  }
  if (flops.points.size() >= 2) list->polylines.push_back(std::move(flops));
  if (memory.points.size() >= 2) list->polylines.push_back(std::move(memory));
}

}  // namespace trainscope::viewer

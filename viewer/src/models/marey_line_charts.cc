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
  for (const auto& [number, step] : steps) {
    const bool in_view = step.end_ns >= view_.start && step.start_ns <= view_.end;
    visible += in_view;
    // On the raw clocks each device's steps move by its own offset: Add
    // decides which are in view.
    const bool kept = in_view || view_.raw;
    for (const DeviceStepRecord& d : step.devices) {
      min_flops_ = std::min(min_flops_, static_cast<double>(d.flops));
      max_flops_ = std::max(max_flops_, static_cast<double>(d.flops));
      min_memory_ = std::min(min_memory_, static_cast<double>(d.peak_memory_bytes));
      max_memory_ = std::max(max_memory_, static_cast<double>(d.peak_memory_bytes));
      if (kept) by_rank_[d.rank].push_back({&step, &d});
    }
  }
  aggregated_ = visible > 0 && view_.plot.w / static_cast<float>(visible) < kMinStepPx;
}

void MareyLineCharts::Add(uint32_t rank, int64_t shift, float base, float span,
                          DrawList* list) const {
  auto mine = by_rank_.find(rank);
  if (mine == by_rank_.end()) return;
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
  for (const auto& [step, device] : mine->second) {
    if (step->end_ns + shift < view_.start || step->start_ns + shift > view_.end) continue;
    const DeviceStepRecord& d = *device;
    const float x0 = std::clamp(view_.TimeToX(d.start_ns + shift), left, right);
    const float x1 = std::clamp(view_.TimeToX(d.end_ns + shift), left, right);
    const float flops_y = base - span * static_cast<float>(Scaled(static_cast<double>(d.flops),
                                                                  min_flops_, max_flops_));
    const float memory_y =
        base - span * static_cast<float>(Scaled(static_cast<double>(d.peak_memory_bytes),
                                                min_memory_, max_memory_));
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

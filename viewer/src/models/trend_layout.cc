#include "trainscope/viewer/trend_layout.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

constexpr float kTop = 56;
constexpr float kPad = 6;

std::string Format(int metric, double value) {
  const auto m = static_cast<UnitTrendModel::Metric>(metric);
  if (UnitTrendModel::IsDuration(m)) return FormatDuration(value);
  if (UnitTrendModel::IsBytes(m)) return FormatBytes(value);
  std::ostringstream out;
  out << static_cast<uint64_t>(std::llround(value));
  return out.str();
}

}  // namespace

TrendLayout::TrendLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends,
                         SelectionState* selection)
    : hierarchy_(hierarchy), trends_(trends), selection_(selection) {}

void TrendLayout::SetViewport(int width, int height) {
  SetField(&width_, width);
  SetField(&height_, height);
}

void TrendLayout::SetLevel(ClusterLevel level) { SetField(&level_, level); }

void TrendLayout::SetFrameSteps(uint32_t steps) {
  SetField(&frame_steps_, std::max<uint32_t>(1, steps));
}

void TrendLayout::SetFrame(std::optional<size_t> frame) { SetField(&wanted_frame_, frame); }

const DrawList& TrendLayout::Draw() {
  if (dirty_ || built_hierarchy_ != hierarchy_->version() || built_trends_ != trends_->version() ||
      built_selection_ != selection_->devices_version()) {
    Rebuild();
  }
  return list_;
}

RectF TrendLayout::CellRect(size_t row, int metric) {
  Draw();
  const Row& r = rows_[row];
  return {label_width_ + static_cast<float>(metric) * cell_width_ + kPad, r.rect.y + 2,
          cell_width_ - 2 * kPad, r.rect.h - 4};
}

PointF TrendLayout::ValuePoint(size_t row, int metric, size_t frame) {
  const RectF cell = CellRect(row, metric);
  const size_t frames = series_.frames.size();
  const double min = column_min_[metric];
  const double span = column_max_[metric] - min;
  const float x =
      frames <= 1 ? cell.x + cell.w / 2
                  : cell.x + cell.w * static_cast<float>(frame) / static_cast<float>(frames - 1);
  const double v = series_.at(rows_[row].unit, metric, frame);
  // Each column spans its smallest to its largest value, so a unit that
  // differs by a few percent from hundreds of others still stands out.
  const float y =
      cell.y + cell.h - (span > 0 ? static_cast<float>((v - min) / span) : 0.5f) * cell.h;
  return {x, y};
}

void TrendLayout::Rebuild() {
  dirty_ = false;
  built_hierarchy_ = hierarchy_->version();
  built_trends_ = trends_->version();
  built_selection_ = selection_->devices_version();
  list_.Clear();
  rows_.clear();
  const float w = static_cast<float>(width_), h = static_cast<float>(height_);
  list_.backgrounds.push_back({{0, 0, w, h}, kBackgroundColor});
  series_ = trends_->Build(hierarchy_, level_, frame_steps_);
  const size_t frames = series_.frames.size();
  const auto& units = hierarchy_->units(level_);
  if (frames == 0 || units.empty()) {
    frame_ = 0;
    list_.texts.push_back({w / 2, h / 2, "no steps yet", kTextColor, Text::Align::kCenter});
    return;
  }
  frame_ = std::min(wanted_frame_.value_or(frames - 1), frames - 1);
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();

  // Which units get a row: all that fit, else the selected ones and those
  // with the longest step time, shown in hierarchy order.
  const size_t fit = std::max<size_t>(1, static_cast<size_t>((h - kTop - 24) / kMinRowHeight));
  std::vector<size_t> chosen(units.size());
  for (size_t u = 0; u < units.size(); ++u) chosen[u] = u;
  std::vector<bool> selected(units.size(), false);
  for (size_t u = 0; u < units.size(); ++u)
    for (size_t d : units[u].devices)
      selected[u] = selected[u] || selection_->IsSelected(m.devices[d].rank);
  if (units.size() > fit) {
    // Outliers first: each unit's largest distance from the median unit in
    // any column (relative to that column's range), over the frames.
    std::vector<double> score(units.size(), 0);
    std::vector<double> values(units.size());
    for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
      for (size_t f = 0; f < frames; ++f) {
        for (size_t u = 0; u < units.size(); ++u) values[u] = series_.at(u, k, f);
        std::vector<double> sorted = values;
        std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
        const double median = sorted[sorted.size() / 2];
        const double range = *std::max_element(values.begin(), values.end()) -
                             *std::min_element(values.begin(), values.end());
        if (range <= 0) continue;
        for (size_t u = 0; u < units.size(); ++u)
          score[u] = std::max(score[u], std::abs(values[u] - median) / range);
      }
    }
    std::stable_sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
      if (selected[a] != selected[b]) return static_cast<bool>(selected[a]);
      return score[a] > score[b];
    });
    chosen.resize(fit);
    std::sort(chosen.begin(), chosen.end());
  }
  const float row_h = std::min(64.0f, (h - kTop - 24) / static_cast<float>(chosen.size()));
  label_width_ = 110;
  cell_width_ = (w - label_width_ - 8) / static_cast<float>(UnitTrendModel::kMetricCount);
  column_max_.assign(UnitTrendModel::kMetricCount, 0);
  column_min_.assign(UnitTrendModel::kMetricCount, 0);
  for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
    double lo = 1e300, hi = 0;
    for (size_t u : chosen) {
      for (size_t f = 0; f < frames; ++f) {
        lo = std::min(lo, series_.at(u, k, f));
        hi = std::max(hi, series_.at(u, k, f));
      }
    }
    column_min_[k] = lo;
    column_max_[k] = hi;
  }

  for (size_t i = 0; i < chosen.size(); ++i) {
    Row row;
    row.unit = chosen[i];
    row.rect = {0, kTop + static_cast<float>(i) * row_h, w, row_h};
    row.selected = selected[chosen[i]];
    rows_.push_back(row);
    if (row.selected)
      list_.rects.push_back({row.rect, Rgba(227, 242, 253)});
    else if (i % 2 == 1)
      list_.rects.push_back({row.rect, Rgba(248, 248, 248)});
    list_.texts.push_back({6, row.rect.y + row_h / 2, units[row.unit].name,
                           row.selected ? kSelectColor : kTextColor, Text::Align::kLeft,
                           row.selected, row_h < 16 ? 6.5f : 8.0f});
  }
  // Column headers with their scale.
  for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
    const float x = label_width_ + static_cast<float>(k) * cell_width_;
    list_.texts.push_back({x + kPad, kTop - 24,
                           UnitTrendModel::MetricName(static_cast<UnitTrendModel::Metric>(k)),
                           kTextColor, Text::Align::kLeft, true});
    list_.texts.push_back({x + kPad, kTop - 10,
                           Cat(Format(k, column_min_[k]), " - ", Format(k, column_max_[k])),
                           kAxisColor, Text::Align::kLeft, false, 7});
    list_.lines.push_back(
        {{x, kTop}, {x, kTop + row_h * static_cast<float>(rows_.size())}, kGridColor});
  }
  // The sparklines and the marked frame.
  for (size_t i = 0; i < rows_.size(); ++i) {
    for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
      Polyline line;
      line.color = k == UnitTrendModel::kWait       ? Rgba(230, 81, 0)
                   : k == UnitTrendModel::kStepTime ? kTextColor
                   : k == UnitTrendModel::kCompute  ? kComputeColor
                   : UnitTrendModel::IsBytes(static_cast<UnitTrendModel::Metric>(k)) ? kSendColor
                                                                                     : kRecvColor;
      line.width = 1.3f;
      for (size_t f = 0; f < frames; ++f) line.points.push_back(ValuePoint(i, k, f));
      if (frames == 1) line.points.push_back({line.points[0].x + 1, line.points[0].y});
      list_.polylines.push_back(std::move(line));
      const PointF p = ValuePoint(i, k, frame_);
      list_.rects.push_back({{p.x - 2, p.y - 2, 4, 4}, kAlertColor});
      if (row_h >= 28) {
        const RectF cell = CellRect(i, k);
        list_.texts.push_back({cell.x + cell.w, cell.y + 6,
                               Format(k, series_.at(rows_[i].unit, k, frame_)), kAxisColor,
                               Text::Align::kRight, false, 6.5f});
      }
    }
  }
  if (!rows_.empty()) {
    for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
      const float x = ValuePoint(0, k, frame_).x;
      list_.lines.push_back({{x, kTop},
                             {x, kTop + row_h * static_cast<float>(rows_.size())},
                             WithAlpha(kAlertColor, 90),
                             1,
                             true});
    }
  }
  const UnitTrendModel::Frame& fr = series_.frames[frame_];
  list_.texts.push_back(
      {8, 14,
       Cat("Trends by ", ClusterLevelName(level_), ", frames of ", frame_steps_, " step",
           frame_steps_ == 1 ? "" : "s", " (", frames, " frames); marked: frame ", frame_ + 1,
           " = steps ", fr.first_step, "-", fr.last_step,
           units.size() > rows_.size() ? Cat("; ", rows_.size(), " of ", units.size(),
                                             " units (those farthest from the median)")
                                       : ""),
       kTextColor, Text::Align::kLeft, true});
}

std::string TrendLayout::TooltipAt(float x, float y) {
  Draw();
  const auto& units = hierarchy_->units(level_);
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (!rows_[i].rect.Contains(x, y)) continue;
    for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
      const RectF cell = CellRect(i, k);
      if (x < cell.x - kPad || x >= cell.x + cell.w + kPad) continue;
      const size_t frames = series_.frames.size();
      size_t f =
          frames <= 1
              ? 0
              : static_cast<size_t>(std::lround(std::clamp((x - cell.x) / cell.w, 0.0f, 1.0f) *
                                                static_cast<float>(frames - 1)));
      const UnitTrendModel::Frame& fr = series_.frames[f];
      return Cat(units[rows_[i].unit].name, ", ",
                 UnitTrendModel::MetricName(static_cast<UnitTrendModel::Metric>(k)), ", steps ",
                 fr.first_step, "-", fr.last_step, ": ",
                 Format(k, series_.at(rows_[i].unit, k, f)));
    }
    return units[rows_[i].unit].name;
  }
  return "";
}

bool TrendLayout::ClickAt(float x, float y) {
  Draw();
  const uint64_t before = selection_->devices_version();
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  const auto& units = hierarchy_->units(level_);
  for (const Row& row : rows_) {
    if (!row.rect.Contains(x, y)) continue;
    std::vector<uint32_t> ranks;
    for (size_t d : units[row.unit].devices) ranks.push_back(m.devices[d].rank);
    selection_->SelectDevices(ranks);
    return selection_->devices_version() != before;
  }
  selection_->ClearDevices();
  return selection_->devices_version() != before;
}

}  // namespace trainscope::viewer

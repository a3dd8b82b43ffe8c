#include "trainscope/viewer/overview_model.h"

#include <algorithm>
#include <cmath>

#include "trainscope/viewer/overview_palette.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

constexpr float kLeftMargin = 78;
constexpr float kRightMargin = 84;
constexpr float kTop = 46;

// Keeps at most two points (min and max) per pixel column so a long run of
// steps costs no more than the chart's width.
std::vector<PointF> Decimate(const std::vector<PointF>& points, float chart_width) {
  if (points.size() <= static_cast<size_t>(2 * chart_width)) return points;
  std::vector<PointF> out;
  out.reserve(static_cast<size_t>(2 * chart_width) + 2);
  size_t i = 0;
  while (i < points.size()) {
    const float column = std::floor(points[i].x);
    PointF low = points[i], high = points[i];
    size_t j = i;
    for (; j < points.size() && std::floor(points[j].x) == column; ++j) {
      if (points[j].y < low.y) low = points[j];
      if (points[j].y > high.y) high = points[j];
    }
    out.push_back({column, low.y});
    if (high.y != low.y) out.push_back({column, high.y});
    i = j;
  }
  return out;
}

}  // namespace

OverviewModel::OverviewModel(size_t max_steps) : max_steps_(std::max<size_t>(1, max_steps)) {}

void OverviewModel::AddStep(const StepRecord& step) {
  StepRecord& slot = steps_[step.step];
  slot = step;
  std::sort(slot.devices.begin(), slot.devices.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  while (steps_.size() > max_steps_) steps_.erase(steps_.begin());
  dirty_ = true;
}

void OverviewModel::SetAlertSteps(std::vector<uint64_t> steps) {
  if (steps == alert_steps_) return;
  alert_steps_ = std::move(steps);
  dirty_ = true;
}

void OverviewModel::SetGaps(std::vector<Gap> gaps) {
  if (gaps.size() == gaps_.size() &&
      std::equal(gaps.begin(), gaps.end(), gaps_.begin(), [](const Gap& a, const Gap& b) {
        return a.start_ns == b.start_ns && a.end_ns == b.end_ns;
      })) {
    return;
  }
  gaps_ = std::move(gaps);
  dirty_ = true;
}

std::optional<uint64_t> OverviewModel::NeighbourStep(uint64_t step, int delta) const {
  auto it = steps_.lower_bound(step);
  if (it == steps_.end() || it->first != step) return std::nullopt;
  for (; delta > 0; --delta) {
    if (++it == steps_.end()) return std::nullopt;
  }
  for (; delta < 0; ++delta) {
    if (it == steps_.begin()) return std::nullopt;
    --it;
  }
  return it->first;
}

void OverviewModel::Clear() {
  steps_.clear();
  bars_layout_.Reset();
  dirty_ = true;
}

void OverviewModel::SetSelectedStep(std::optional<uint64_t> step) {
  if (selected_ == step) return;
  selected_ = step;
  dirty_ = true;
}

void OverviewModel::SetSelectedRanks(const std::set<uint32_t>& ranks) {
  if (ranks == selected_ranks_) return;
  selected_ranks_ = ranks;
  bars_layout_.SetSelectedRanks(ranks);
  dirty_ = true;
}

void OverviewModel::SetViewport(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = std::max(width, 200);
  height_ = std::max(height, 200);
  dirty_ = true;
}

const DrawList& OverviewModel::Draw() {
  if (dirty_) Rebuild();
  return list_;
}

const std::vector<OverviewModel::KernelRow>& OverviewModel::TopKernels() {
  if (dirty_) Rebuild();
  return kernels_;
}

const std::vector<OverviewModel::DeviceBar>& OverviewModel::Bars() {
  if (dirty_) Rebuild();
  return bars_;
}

RectF OverviewModel::bars_rect() const { return bars_area_; }

float OverviewModel::StepX(uint64_t step) const {
  if (last_step_ == first_step_) return chart_.x + chart_.w / 2;
  return chart_.x + chart_.w * static_cast<float>(step - first_step_) /
                        static_cast<float>(last_step_ - first_step_);
}

void OverviewModel::Rebuild() {
  dirty_ = false;
  list_.Clear();
  bars_.clear();
  kernels_.clear();
  const float usable = static_cast<float>(height_) - kTop;
  chart_ = {kLeftMargin, kTop, static_cast<float>(width_) - kLeftMargin - kRightMargin,
            usable * 0.5f - 30};
  bars_area_ = {kLeftMargin, chart_.y + chart_.h + 66, chart_.w, 0};
  bars_area_.h = static_cast<float>(height_) - bars_area_.y - 34;
  list_.backgrounds.push_back(
      {{0, 0, static_cast<float>(width_), static_cast<float>(height_)}, kBackgroundColor});
  list_.texts.push_back({12, 16, "Training overview", kTextColor, Text::Align::kLeft, true, 11});
  if (steps_.empty()) {
    list_.texts.push_back({static_cast<float>(width_) / 2, static_cast<float>(height_) / 2,
                           "No steps yet", kAxisColor, Text::Align::kCenter});
    return;
  }
  first_step_ = steps_.begin()->first;
  last_step_ = steps_.rbegin()->first;
  BuildChart();
  // The selected step's bars, else the newest's.
  auto it = selected_.has_value() ? steps_.find(*selected_) : steps_.end();
  if (it == steps_.end()) it = std::prev(steps_.end());
  bars_layout_.Lay(it->second, bars_area_, &list_);
  bars_ = bars_layout_.bars();
  kernels_ = bars_layout_.kernels();
  bars_area_ = bars_layout_.area();
}

void OverviewModel::BuildChart() {
  // Series.
  std::map<uint32_t, std::vector<PointF>> device_lines;
  std::vector<PointF> comm_line, wait_line, min_line, mean_line, max_line;
  int64_t max_step_time = 1, max_comm = 1;
  std::vector<uint32_t> ranks;
  // A device whose end mark never came (a job's partial last step: rank 0's
  // unfinished one, the others' the moment from their last mark to the end)
  // is left out of the lines, a hole rather than a spike or a plunge to near
  // zero, unless nothing in the chart completed (a source without end marks).
  bool any_complete = false;
  for (const auto& [number, step] : steps_) {
    for (const DeviceStepRecord& d : step.devices) any_complete = any_complete || d.complete;
  }
  auto Drawn = [any_complete](const DeviceStepRecord& d) { return d.complete || !any_complete; };
  for (const auto& [number, step] : steps_) {
    double comm = 0;
    size_t drawn = 0;
    for (const DeviceStepRecord& d : step.devices) {
      if (!Drawn(d)) continue;
      max_step_time = std::max(max_step_time, d.step_time_ns);
      comm += d.collective_ns;
      ++drawn;
    }
    if (drawn > 0) max_comm = std::max<int64_t>(max_comm, static_cast<int64_t>(comm / drawn));
  }
  const double left_top = max_step_time * 1.1;
  const double right_top = max_comm * 1.1;
  auto left_y = [&](double ns) {
    return chart_.y + chart_.h - static_cast<float>(ns / left_top) * chart_.h;
  };
  auto right_y = [&](double ns) {
    return chart_.y + chart_.h - static_cast<float>(ns / right_top) * chart_.h;
  };
  size_t device_count = 0;
  for (const auto& [number, step] : steps_)
    device_count = std::max(device_count, step.devices.size());
  const bool per_device = device_count <= kMaxDeviceLines;
  for (const auto& [number, step] : steps_) {
    if (step.devices.empty()) continue;
    const float x = StepX(number);
    double comm = 0, wait = 0, sum = 0;
    int64_t low = INT64_MAX, high = 0;
    size_t measured = 0;
    for (const auto& d : step.devices) {
      if (!Drawn(d)) continue;
      ++measured;
      comm += d.collective_ns;
      wait += d.wait_ns;
      sum += d.step_time_ns;
      low = std::min(low, d.step_time_ns);
      high = std::max(high, d.step_time_ns);
      if (per_device) device_lines[d.rank].push_back({x, left_y(d.step_time_ns)});
    }
    if (measured == 0) continue;
    const double n = static_cast<double>(measured);
    comm_line.push_back({x, right_y(comm / n)});
    wait_line.push_back({x, right_y(wait / n)});
    if (!per_device) {
      min_line.push_back({x, left_y(low)});
      mean_line.push_back({x, left_y(sum / n)});
      max_line.push_back({x, left_y(high)});
    }
  }

  // Frame, grid and axes.
  list_.backgrounds.push_back({chart_, Rgba(250, 250, 252), WithAlpha(kAxisColor, 120)});
  for (double tick : NiceTicks(0, left_top, 5)) {
    const float y = left_y(tick);
    list_.lines.push_back({{chart_.x, y}, {chart_.x + chart_.w, y}, kGridColor, 1});
    list_.texts.push_back({chart_.x - 6, y, FormatDuration(tick), kTextColor, Text::Align::kRight});
  }
  for (double tick : NiceTicks(0, right_top, 5)) {
    const float y = right_y(tick);
    list_.lines.push_back({{chart_.x + chart_.w, y}, {chart_.x + chart_.w + 4, y}, kCommColor, 1});
    list_.texts.push_back(
        {chart_.x + chart_.w + 7, y, FormatDuration(tick), Rgba(150, 110, 0), Text::Align::kLeft});
  }
  const uint64_t span = last_step_ - first_step_;
  for (double tick : NiceTicks(static_cast<double>(first_step_), static_cast<double>(last_step_),
                               std::max(2, static_cast<int>(chart_.w / 90)))) {
    if (span > 0 && tick != std::floor(tick)) continue;
    const float x = StepX(static_cast<uint64_t>(tick));
    list_.lines.push_back({{x, chart_.y + chart_.h}, {x, chart_.y + chart_.h + 4}, kAxisColor, 1});
    list_.texts.push_back({x, chart_.y + chart_.h + 13, std::to_string(static_cast<uint64_t>(tick)),
                           kTextColor, Text::Align::kCenter});
  }
  // Alert marks straddle the step axis, over the ticks.
  for (uint64_t step : alert_steps_) {
    if (step < first_step_ || step > last_step_) continue;
    const float x = StepX(step);
    list_.lines.push_back(
        {{x, chart_.y + chart_.h - 6}, {x, chart_.y + chart_.h + 6}, kAlertColor, 3});
  }
  list_.texts.push_back({chart_.x + chart_.w / 2, chart_.y + chart_.h + 28, "step", kTextColor,
                         Text::Align::kCenter});
  list_.texts.push_back({16, chart_.y + chart_.h / 2, "step time per device", kTextColor,
                         Text::Align::kCenter, false, 0, true});
  list_.texts.push_back({static_cast<float>(width_) - 12, chart_.y + chart_.h / 2,
                         "avg communication", Rgba(150, 110, 0), Text::Align::kCenter, false, 0,
                         true});

  // An outage going on now: the chart is what was last seen, so it is
  // greyed behind its lines and says since when (issue 23.1).
  for (const Gap& gap : gaps_) {
    if (gap.end_ns != 0 || steps_.empty()) continue;
    list_.backgrounds.push_back({chart_, kStaleColor, WithAlpha(kAxisColor, 120)});
    // In the step axis's label row (right of "step"), where no line runs.
    list_.texts.push_back({chart_.x + chart_.w, chart_.y + chart_.h + 28,
                           "no feed since step " + std::to_string(steps_.rbegin()->first) +
                               ": what is shown may be old",
                           Rgba(192, 57, 43), Text::Align::kRight});
    break;
  }
  // Outages: where one lies between two steps the lines break (at the
  // later step's x) and a band marks the stretch without data.
  std::vector<float> breaks;
  const StepRecord* previous = nullptr;
  for (const auto& [number, step] : steps_) {
    if (step.devices.empty()) continue;
    if (previous != nullptr) {
      for (const Gap& gap : gaps_) {
        const int64_t gap_end = gap.end_ns == 0 ? INT64_MAX : gap.end_ns;
        if (gap.start_ns < step.start_ns && gap_end > previous->end_ns) {
          const float x0 = StepX(previous->step), x1 = StepX(number);
          breaks.push_back(x1);
          list_.backgrounds.push_back(
              {{x0, chart_.y, x1 - x0, chart_.h}, kGapColor, WithAlpha(kAxisColor, 60)});
          list_.texts.push_back(
              {(x0 + x1) / 2, chart_.y + 12, "no feed", kAxisColor, Text::Align::kCenter});
          break;
        }
      }
    }
    previous = &step;
  }
  auto add_series = [&](const std::vector<PointF>& points, Color color, float width, bool dashed) {
    size_t from = 0;
    for (size_t b = 0; b <= breaks.size(); ++b) {
      size_t to = from;
      while (to < points.size() && (b == breaks.size() || points[to].x < breaks[b])) ++to;
      if (to > from) {
        std::vector<PointF> piece(points.begin() + from, points.begin() + to);
        list_.polylines.push_back({Decimate(piece, chart_.w), color, width, dashed});
      }
      from = to;
    }
  };

  // Series.
  if (per_device) {
    for (const auto& [rank, points] : device_lines) {
      add_series(points, OverviewPalette::Rank(rank), 1.5f, false);
    }
  } else {
    add_series(max_line, Rgba(31, 119, 180), 1.2f, false);
    add_series(mean_line, Rgba(20, 60, 120), 2.0f, false);
    add_series(min_line, Rgba(31, 119, 180), 1.2f, true);
  }
  add_series(comm_line, kCommColor, 2.5f, false);
  add_series(wait_line, kWaitColor, 2.0f, true);

  // Selected step.
  if (selected_.has_value() && *selected_ >= first_step_ && *selected_ <= last_step_) {
    const float x = StepX(*selected_);
    list_.lines.push_back({{x, chart_.y}, {x, chart_.y + chart_.h}, Rgba(25, 60, 160), 1.5f, true});
  }

  // Legend, on the title line.
  float x = 190;
  const float y = 16;
  if (per_device) {
    list_.lines.push_back({{x, y}, {x + 16, y}, OverviewPalette::Rank(0), 1.5f});
    list_.texts.push_back({x + 20, y, "step time, one line per device (left axis)", kTextColor});
    x += 20 + 7.0f * 42 + 18;
  } else {
    list_.lines.push_back({{x, y}, {x + 16, y}, Rgba(20, 60, 120), 2});
    list_.texts.push_back({x + 20, y, "step time min/mean/max over devices (left)", kTextColor});
    x += 20 + 7.0f * 42 + 18;
  }
  x += OverviewPalette::AddSwatch(&list_, x, y, kCommColor, "avg comm duration (right)", true);
  list_.lines.push_back({{x, y}, {x + 16, y}, kWaitColor, 2, true});
  list_.texts.push_back({x + 20, y, "avg comm wait (right)", kTextColor});
}

std::optional<uint64_t> OverviewModel::StepAt(float x, float y) {
  if (dirty_) Rebuild();
  if (steps_.empty()) return std::nullopt;
  const RectF hit = {chart_.x - 4, chart_.y, chart_.w + 8, chart_.h + 20};
  if (!hit.Contains(x, y)) return std::nullopt;
  std::optional<uint64_t> best;
  float best_distance = 1e30f;
  // Steps are sorted by x: find the nearest by bisection.
  auto it = steps_.lower_bound(first_step_);
  const double fraction = chart_.w > 0 ? (x - chart_.x) / chart_.w : 0;
  const double guess = first_step_ + fraction * static_cast<double>(last_step_ - first_step_);
  it = steps_.lower_bound(static_cast<uint64_t>(std::max(0.0, std::floor(guess))));
  for (auto candidate : {it, it == steps_.begin() ? it : std::prev(it)}) {
    if (candidate == steps_.end()) continue;
    const float distance = std::fabs(StepX(candidate->first) - x);
    if (distance < best_distance) best_distance = distance, best = candidate->first;
  }
  if (it != steps_.end() && std::next(it) != steps_.end()) {
    const float distance = std::fabs(StepX(std::next(it)->first) - x);
    if (distance < best_distance) best = std::next(it)->first;
  }
  return best;
}

std::string OverviewModel::TooltipAt(float x, float y) {
  if (dirty_) Rebuild();
  if (std::string bar = bars_layout_.TooltipAt(x, y); !bar.empty()) return bar;
  const std::optional<uint64_t> step = StepAt(x, y);
  if (!step.has_value()) return {};
  const StepRecord& record = steps_.at(*step);
  if (record.devices.empty()) return "step " + std::to_string(*step);
  int64_t low = INT64_MAX, high = 0;
  double comm = 0, wait = 0;
  uint32_t slowest = 0;
  for (const auto& d : record.devices) {
    low = std::min(low, d.step_time_ns);
    if (d.step_time_ns > high) high = d.step_time_ns, slowest = d.rank;
    comm += d.collective_ns;
    wait += d.wait_ns;
  }
  const double n = static_cast<double>(record.devices.size());
  return "step " + std::to_string(*step) + "\nstep time: " + FormatDuration(low) + " .. " +
         FormatDuration(high) + " (slowest: rank " + std::to_string(slowest) + ")" +
         "\navg comm duration: " + FormatDuration(comm / n) +
         "\navg comm wait: " + FormatDuration(wait / n) + "\nclick to select";
}

}  // namespace trainscope::viewer

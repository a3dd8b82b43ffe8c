#include "trainscope/viewer/marey_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

MareyLayout::Options LayoutOptions(const MareyModel::Options& options) {
  return {.bins = options.bins,  // MareyLayout keeps at least one
          .min_band_px = options.min_band_px,
          .dense_row_px = options.dense_row_px,
          .chart_row_px = options.chart_row_px,
          .layout_threads = options.layout_threads};
}

}  // namespace

MareyModel::MareyModel(const NameTable* names) : MareyModel(names, Options{}) {}

MareyModel::MareyModel(const NameTable* names, Options options)
    : names_(names),
      options_(options),
      store_(options.max_operators),
      layout_(LayoutOptions(options)) {
  options_.bins = layout_.options().bins;  // at least one
  SetViewport(view_.width, view_.height);
}

MareyModel::~MareyModel() = default;

void MareyModel::MarkDirty() {
  layout_dirty_ = true;
  ++version_;
}

// ---------------------------------------------------------------- data

void MareyModel::SetDevices(const std::vector<DeviceInfo>& devices) {
  store_.SetDevices(devices);
  MarkDirty();
}

void MareyModel::AddOperators(const std::vector<OperatorRecord>& operators) {
  if (operators.empty()) return;
  store_.AddOperators(operators);
  MarkDirty();
}

void MareyModel::AddStep(const StepRecord& step) {
  store_.AddStep(step);
  MarkDirty();
}

void MareyModel::SetAlerts(const std::vector<Alert>& alerts) {
  store_.SetAlerts(alerts);
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::Clear() {
  store_.Clear();
  // A range or step of the old data means nothing in the new.
  if (window_.mode() == MareyTimeWindow::Mode::kManual ||
      window_.mode() == MareyTimeWindow::Mode::kAroundStep) {
    window_.Follow();
  }
  selected_step_.reset();
  ClearFocus();
  MarkDirty();
}

void MareyModel::SyncWithStore() {
  if (store_.layout_version() != store_layout_version_) {
    store_layout_version_ = store_.layout_version();
    rows_dirty_ = groups_dirty_ = true;
  }
  if (store_.data_version() != store_data_version_) {
    store_data_version_ = store_.data_version();
    groups_dirty_ = true;
  }
}

// ---------------------------------------------------------------- view

void MareyModel::SetViewport(int width, int height) {
  view_.Resize(width, height);
  MarkDirty();
}

void MareyModel::SetTimeRange(int64_t start_ns, int64_t end_ns) {
  window_.SetManual(start_ns, end_ns);
  // A range chosen by hand is known at once (the next Layout keeps it).
  const MareyTimeWindow::Range range = window_.Resolve(store_.steps(), 0, -1, 0);
  view_.start = range.start;
  view_.end = range.end;
  MarkDirty();
}

void MareyModel::ResetZoom() {
  window_.ShowWholeRun();
  MarkDirty();
}

void MareyModel::FollowNewest(uint32_t steps) {
  window_.Follow(steps);
  MarkDirty();
}

void MareyModel::ShowAroundStep(uint64_t step, uint32_t steps) {
  window_.ShowAround(step, steps);
  MarkDirty();
}

void MareyModel::ShowReadableRange() {
  const auto& steps = store_.steps();
  const bool newest =
      !selected_step_.has_value() || steps.empty() || *selected_step_ >= steps.rbegin()->first;
  if (newest) {
    window_.Follow(MareyTimeWindow::kDefaultSteps);
  } else {
    window_.ShowAround(*selected_step_, MareyTimeWindow::kDefaultSteps);
  }
  MarkDirty();
}

void MareyModel::ZoomAt(float x, double factor) {
  if (factor <= 0) return;
  if (store_.steps().size() >= 2 && window_.ZoomSteps(factor)) {
    MarkDirty();
    return;
  }
  if (layout_dirty_) Layout();  // resolve the automatic range first
  const int64_t t = XToTime(x);
  const double start = t - (t - view_.start) / factor;
  const double end = t + (view_.end - t) / factor;
  SetTimeRange(static_cast<int64_t>(start), static_cast<int64_t>(end));
}

void MareyModel::PanBy(float dx_pixels) {
  if (layout_dirty_) Layout();
  const double span = static_cast<double>(view_.end - view_.start);
  const int64_t shift = static_cast<int64_t>(dx_pixels * span / std::max(1.0f, view_.plot.w));
  SetTimeRange(view_.start - shift, view_.end - shift);
}

void MareyModel::BrushTo(float x0, float x1) {
  if (std::fabs(x1 - x0) < 3) return;
  if (layout_dirty_) Layout();
  SetTimeRange(XToTime(std::min(x0, x1)), XToTime(std::max(x0, x1)));
}

void MareyModel::SetRawTimestamps(bool raw) {
  if (raw == view_.raw) return;
  view_.raw = raw;
  // The clocks may be far apart: a range chosen on one means nothing on the other.
  if (window_.mode() == MareyTimeWindow::Mode::kManual) window_.ShowWholeRun();
  MarkDirty();
}

void MareyModel::SetShowCpuRows(bool show) {
  if (show == show_cpu_rows_) return;
  show_cpu_rows_ = show;
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::SetGrouping(Grouping grouping) {
  if (grouping == grouping_) return;
  grouping_ = grouping;
  rows_dirty_ = groups_dirty_ = true;
  MarkDirty();
}

void MareyModel::SetExpanded(const std::string& group_key, bool expanded) {
  expanded_[group_key] = expanded;
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::ToggleExpanded(const std::string& group_key) {
  SetExpanded(group_key, !expanded_[group_key]);
}

void MareyModel::SetRankFilter(const std::vector<uint32_t>& ranks) {
  rank_filter_ = ranks;
  std::sort(rank_filter_.begin(), rank_filter_.end());
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::SetSelectedStep(std::optional<uint64_t> step) {
  if (step == selected_step_) return;
  selected_step_ = step;
  MarkDirty();
}

void MareyModel::SetSelection(const std::set<uint32_t>& ranks,
                              std::optional<std::pair<uint32_t, uint32_t>> link) {
  std::vector<uint32_t> sorted(ranks.begin(), ranks.end());
  if (sorted == selected_ranks_ && link == selected_link_) return;
  selected_ranks_ = std::move(sorted);
  selected_link_ = link;
  MarkDirty();
}

void MareyModel::FocusOnAlert(const Alert& alert) {
  std::vector<uint32_t> ranks = alert.ranks;
  std::sort(ranks.begin(), ranks.end());
  const uint32_t name = alert.op.empty() ? 0 : names_->Find(alert.op);
  std::optional<std::pair<int64_t, int64_t>> extent;
  if (name != 0) extent = store_.OperatorExtent(ranks, name, alert.step, view_.raw);
  if (!extent.has_value()) {
    auto step = store_.steps().find(alert.step);
    if (step != store_.steps().end()) extent = {step->second.start_ns, step->second.end_ns};
  }
  FocusOn(std::move(ranks), name, alert.step, extent);
}

void MareyModel::FocusOn(std::vector<uint32_t> ranks, uint32_t name, std::optional<uint64_t> step,
                         std::optional<std::pair<int64_t, int64_t>> extent, FocusRows rows) {
  std::sort(ranks.begin(), ranks.end());
  focus_ranks_ = std::move(ranks);
  focus_rows_tinted_ = rows == FocusRows::kTinted;
  focus_name_ = name;
  focus_step_ = step;
  if (step.has_value()) selected_step_ = step;
  if (extent.has_value() && extent->second >= extent->first) {
    // Keep the operator in context: it fills about a third of the plot.
    const int64_t pad = std::max<int64_t>(extent->second - extent->first, 2000);
    SetTimeRange(extent->first - pad, extent->second + pad);
  }
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::ClearFocus() {
  focus_ranks_.clear();
  focus_name_ = 0;
  focus_step_.reset();
  MarkDirty();
}

void MareyModel::ClearFocusUnlessStep(uint64_t step) {
  if (focus_step_.has_value() && *focus_step_ != step) ClearFocus();
}

float MareyModel::TimeToX(int64_t t) const { return view_.TimeToX(t); }

int64_t MareyModel::XToTime(float x) const { return view_.XToTime(x); }

int64_t MareyModel::origin_ns() const {
  const int64_t origin = store_.low(view_.raw);
  return origin == INT64_MAX ? 0 : origin;
}

// ---------------------------------------------------------------- layout

void MareyModel::BuildGroups() {
  if (!groups_dirty_) return;
  groups_dirty_ = false;
  groups_.clear();
  if (grouping_ == Grouping::kNone) return;
  groups_ = MareyGroup::Build(
      grouping_ == Grouping::kStage ? MareyGroup::By::kStage : MareyGroup::By::kHost,
      store_.devices(), store_.device_info());
}

void MareyModel::BuildRows() {
  if (!rows_dirty_) return;
  rows_dirty_ = false;
  rows_.clear();
  row_tracks_.clear();
  auto included = [&](uint32_t rank) {
    return rank_filter_.empty() ||
           std::binary_search(rank_filter_.begin(), rank_filter_.end(), rank);
  };
  auto add_device = [&](uint32_t rank) {
    if (!included(rank)) return;
    Row row;
    row.kind = RowKind::kDevice;
    row.rank = rank;
    row.label = "rank " + std::to_string(rank);
    // The alert cross goes on the device's first row only.
    row.has_alert = store_.alerts_by_rank().count(rank) > 0;
    auto lanes = store_.streams().find(rank);
    if (lanes == store_.streams().end() || lanes->second.empty()) {
      rows_.push_back(row);
      row_tracks_.push_back(store_.devices().at(rank).get());
      return;
    }
    if (show_cpu_rows_) {
      Row cpu = row;
      cpu.label += " CPU";
      cpu.weight = options_.cpu_row_weight;
      rows_.push_back(cpu);
      row_tracks_.push_back(store_.devices().at(rank).get());
      row.has_alert = false;
    }
    for (const auto& [lane, track] : lanes->second) {
      Row stream = row;
      stream.gpu = true;
      stream.gpu_device = track->gpu_device;
      stream.gpu_stream = track->gpu_stream;
      stream.label = "rank " + std::to_string(rank) + " GPU" + std::to_string(track->gpu_device) +
                     " s" + std::to_string(track->gpu_stream);
      rows_.push_back(stream);
      row_tracks_.push_back(track.get());
      row.has_alert = false;
    }
  };
  if (grouping_ == Grouping::kNone) {
    for (const auto& [rank, track] : store_.devices()) add_device(rank);
    return;
  }
  for (const auto& [key, group] : groups_) {
    if (std::none_of(group->ranks.begin(), group->ranks.end(), included)) continue;
    const bool expanded = expanded_[key];
    bool alert = false;
    for (uint32_t rank : group->ranks) alert = alert || store_.alerts_by_rank().count(rank) > 0;
    const RowKind kinds[] = {RowKind::kGroupMin, RowKind::kGroupAvg, RowKind::kGroupMax};
    const MareyTrack* tracks[] = {&group->min, &group->avg, &group->max};
    for (int k = 0; k < 3; ++k) {
      Row row;
      row.kind = kinds[k];
      row.group_key = key;
      row.label = (k == 0 ? std::string(expanded ? "\xE2\x96\xBE " : "\xE2\x96\xB8 ") + key + " "
                          : std::string()) +
                  MareyRowKindSuffix(kinds[k]);
      row.has_alert = alert && k == 0;
      row.expanded = expanded;
      rows_.push_back(row);
      row_tracks_.push_back(tracks[k]);
    }
    if (expanded) {
      for (uint32_t rank : group->ranks) {
        const size_t before = rows_.size();
        add_device(rank);
        for (size_t r = before; r < rows_.size(); ++r) {
          rows_[r].group_key = key;  // indented under the group
        }
      }
    }
  }
}

void MareyModel::Layout() {
  layout_dirty_ = false;
  store_.Prepare();
  SyncWithStore();
  BuildGroups();
  BuildRows();
  const MareyTimeWindow::Range range = window_.Resolve(store_.steps(), store_.low(view_.raw),
                                                       store_.high(view_.raw), store_.high(false));
  view_.start = range.start;
  view_.end = range.end;
  MareyLayout::Frame frame;
  frame.view = view_;
  frame.origin_ns = origin_ns();
  frame.rows = &rows_;
  frame.tracks = &row_tracks_;
  frame.stages.resize(rows_.size());
  row_step_values_.resize(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) {
    frame.stages[i] = RowStage(i);
    row_step_values_[i] = StepValues(i);
  }
  frame.step_values = row_step_values_;  // the hit tester's pixel-map tooltips read them too
  frame.steps = &store_.steps();
  frame.selected_step = selected_step_;
  frame.focus_ranks = focus_ranks_;
  frame.focus_name = focus_name_;
  frame.focus_step = focus_step_;
  frame.focus_rows_tinted = focus_rows_tinted_;
  frame.selected_ranks = selected_ranks_;
  frame.selected_link = selected_link_;
  frame.devices = store_.devices().size();
  frame.operators = store_.operator_count();
  layout_.Lay(frame);
}

int MareyModel::RowStage(size_t index) const {
  const MareyRow& row = rows_[index];
  if (row.kind == MareyRowKind::kDevice) {
    auto it = store_.device_info().find(row.rank);
    return it == store_.device_info().end() ? -1 : static_cast<int>(it->second.stage);
  }
  if (grouping_ != Grouping::kStage) return -1;
  auto group = groups_.find(row.group_key);
  if (group == groups_.end() || group->second->ranks.empty()) return -1;
  auto it = store_.device_info().find(group->second->ranks.front());
  return it == store_.device_info().end() ? -1 : static_cast<int>(it->second.stage);
}

std::vector<const DeviceStepRecord*> MareyModel::StepValues(size_t index) const {
  std::vector<const DeviceStepRecord*> values;
  const auto& steps = store_.steps();
  if (steps.empty() || index >= rows_.size()) return values;
  auto step = selected_step_.has_value() ? steps.find(*selected_step_) : steps.end();
  if (step == steps.end()) step = std::prev(steps.end());
  const MareyRow& row = rows_[index];
  std::vector<uint32_t> ranks;
  if (row.kind == MareyRowKind::kDevice) {
    ranks.push_back(row.rank);
  } else {
    auto group = groups_.find(row.group_key);
    if (group != groups_.end()) ranks = group->second->ranks;
  }
  for (const DeviceStepRecord& d : step->second.devices) {
    if (std::find(ranks.begin(), ranks.end(), d.rank) != ranks.end()) values.push_back(&d);
  }
  return values;
}

const std::vector<MareyModel::Row>& MareyModel::Rows() {
  if (layout_dirty_) Layout();
  return rows_;
}

const DrawList& MareyModel::Draw() {
  if (layout_dirty_) Layout();
  return layout_.list();
}

std::optional<MareyModel::Hit> MareyModel::HitTest(float x, float y) {
  if (layout_dirty_) Layout();
  MareyHitTester::Scene scene;
  scene.names = names_;
  scene.store = &store_;
  scene.view = &view_;
  scene.layout = &layout_;
  scene.rows = &rows_;
  scene.tracks = &row_tracks_;
  scene.groups = &groups_;
  scene.step_values = &row_step_values_;
  scene.bins = options_.bins;
  scene.origin_ns = origin_ns();
  return MareyHitTester::HitTest(scene, x, y);
}

}  // namespace trainscope::viewer

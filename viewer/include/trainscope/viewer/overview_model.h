// The training overview (Wei et al.): a dual-axis line chart over steps
// (step time per device on the left axis; average communication duration and
// wait on the right; outages and alert steps marked) and, for the selected
// step, one stacked bar per device (OverviewBarsLayout: data wait / compute /
// communication wait / transfer / idle as the analysis measured them, or
// device time and the step's top kernels for GPU work, on an axis that does
// not rescale every frame). The model holds the steps and the selection and
// lays out the chart; the bars are its collaborator's.
//
// Usage:
//   OverviewModel overview;
//   overview.AddStep(step_record);
//   overview.SetSelectedStep(selection.selected_step());
//   overview.SetViewport(800, 600);
//   const DrawList& list = overview.Draw();   // recomputed only when stale
//   std::optional<uint64_t> step = overview.StepAt(x, y);  // click to select
//
// With more than kMaxDeviceLines devices the chart draws the min / mean /
// max over devices instead of one line each, and more steps than pixels are
// reduced to one min/max pair per pixel column, so drawing stays bounded.
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_OVERVIEW_MODEL_H_
#define TRAINSCOPE_VIEWER_OVERVIEW_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/overview_bars_layout.h"
#include "trainscope/viewer/overview_palette.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class OverviewModel {
 public:
  static constexpr size_t kMaxDeviceLines = 16;
  static constexpr size_t kDefaultMaxSteps = 20000;

  using Segment = OverviewBarsLayout::Segment;
  using DeviceBar = OverviewBarsLayout::DeviceBar;
  using KernelRow = OverviewBarsLayout::KernelRow;
  static constexpr size_t kMaxKernelRows = OverviewBarsLayout::kMaxKernelRows;

  explicit OverviewModel(size_t max_steps = kDefaultMaxSteps);

  void AddStep(const StepRecord& step);
  void Clear();
  void SetSelectedStep(std::optional<uint64_t> step);
  // Linked selection: the selected devices' bars stand out (OverviewBarsLayout).
  void SetSelectedRanks(const std::set<uint32_t>& ranks);
  void SetViewport(int width, int height);
  // Time ranges (ns, the steps' clock) the viewer had no feed for
  // (ConnectionModel's outages): the lines break across them and a band
  // marks them, instead of drawing straight across as if there were data.
  // end_ns 0: still going on; then the whole chart is greyed ("no feed
  // since step N"), as everything it shows may be old.
  struct Gap {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  void SetGaps(std::vector<Gap> gaps);
  const std::vector<Gap>& gaps() const { return gaps_; }

  // Steps that raised a performance alert (AlertsModel::AlertSteps): a red
  // mark on the step axis, so a slowdown in the lines can be matched to it.
  void SetAlertSteps(std::vector<uint64_t> steps);

  const DrawList& Draw();
  const std::vector<DeviceBar>& Bars();
  // The selected (else newest) step's top kernels summed over its devices,
  // by total time; empty without GPU work.
  const std::vector<KernelRow>& TopKernels();
  // The step under a point of the line chart (nearest), if any.
  std::optional<uint64_t> StepAt(float x, float y);
  // Hover text for a point: the step's values or a bar's segments.
  std::string TooltipAt(float x, float y);

  size_t step_count() const { return steps_.size(); }
  // The step `delta` places after `step` (before, when negative) among the
  // steps held; nullopt past either end.
  std::optional<uint64_t> NeighbourStep(uint64_t step, int delta) const;
  std::optional<uint64_t> selected_step() const { return selected_; }
  RectF chart_rect() const { return chart_; }
  RectF bars_rect() const;

  // Series colours (OverviewPalette; also used by tests to find them).
  static constexpr Color kIntervalColor = OverviewPalette::kIntervalColor;
  static constexpr Color kForwardBackwardColor = OverviewPalette::kForwardBackwardColor;
  static constexpr Color kTailColor = OverviewPalette::kTailColor;
  static constexpr Color kCommColor = OverviewPalette::kCommColor;
  static constexpr Color kWaitColor = OverviewPalette::kWaitColor;
  static constexpr Color kGapColor = OverviewPalette::kGapColor;
  static constexpr Color kStaleColor = OverviewPalette::kStaleColor;
  static constexpr Color kGpuComputeColor = OverviewPalette::kGpuComputeColor;
  static constexpr Color kNcclTransferColor = OverviewPalette::kNcclTransferColor;
  static constexpr Color kNcclWaitColor = OverviewPalette::kNcclWaitColor;
  static constexpr Color kCopyColor = OverviewPalette::kCopyColor;
  static constexpr Color kLaunchBoundColor = OverviewPalette::kLaunchBoundColor;
  static constexpr Color kHostSyncColor = OverviewPalette::kHostSyncColor;
  static constexpr Color kGpuDataWaitColor = OverviewPalette::kGpuDataWaitColor;
  static constexpr Color kGpuIdleColor = OverviewPalette::kGpuIdleColor;

 private:
  void Rebuild();
  void BuildChart();
  float StepX(uint64_t step) const;

  size_t max_steps_;
  std::map<uint64_t, StepRecord> steps_;
  std::optional<uint64_t> selected_;
  std::set<uint32_t> selected_ranks_;
  std::vector<Gap> gaps_;
  std::vector<uint64_t> alert_steps_;
  int width_ = 800;
  int height_ = 600;
  bool dirty_ = true;
  DrawList list_;
  std::vector<DeviceBar> bars_;
  std::vector<KernelRow> kernels_;
  RectF chart_;
  RectF bars_area_;
  OverviewBarsLayout bars_layout_;  // the selected step's bars, on a steady axis
  uint64_t first_step_ = 0;
  uint64_t last_step_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_OVERVIEW_MODEL_H_

// The training overview (Wei et al.): a dual-axis line chart over steps
// (step time per device on the left axis; average communication duration and
// wait on the right) and, for the selected step, one stacked bar per device:
// data wait / compute / communication wait / transfer / idle, as the
// analysis measured them, on a time axis that does not rescale every frame
// (StableScale), each bar underlined in its device's line colour.
//
// A device with GPU work (DeviceStepRecord::has_gpu) gets a bar of device
// time instead: compute kernels (GPU busy) / NCCL wait / NCCL transfer not
// hidden behind compute / copies / idle because the CPU launched nothing /
// idle in a host sync / idle waiting for data / the rest, each clamped to
// what the step has left. The selected step's detail then lists its top
// kernels over the devices (TopKernels), beside the bars.
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
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/stable_scale.h"

namespace trainscope::viewer {

class OverviewModel {
 public:
  static constexpr size_t kMaxDeviceLines = 16;
  static constexpr size_t kDefaultMaxSteps = 20000;

  // One piece of a bar, bottom to top.
  struct Segment {
    std::string label;
    int64_t ns = 0;
    Color color = 0;
    RectF rect;
  };

  // One device's stacked bar for the selected step, in ns and pixels. CPU
  // bars fill the named fields and their three segments; GPU bars (gpu)
  // their device-time segments.
  struct DeviceBar {
    bool gpu = false;
    std::vector<Segment> segments;
    uint32_t rank = 0;
    int64_t step_time_ns = 0;
    int64_t interval_ns = 0;  // data wait
    int64_t compute_ns = 0;   // forward + backward
    int64_t tail_ns = 0;      // the rest of the step
    int64_t comm_ns = 0;
    int64_t wait_ns = 0;
    RectF interval_rect;
    RectF compute_rect;
    RectF tail_rect;
    RectF comm_rect;
    RectF wait_rect;
  };

  // A kernel name over the selected step's devices.
  struct KernelRow {
    std::string name;
    OpClass op_class = OpClass::kGpuKernel;
    uint32_t count = 0;
    int64_t total_ns = 0;
    std::string launch_op;  // of the device with the largest share
  };
  static constexpr size_t kMaxKernelRows = 10;

  explicit OverviewModel(size_t max_steps = kDefaultMaxSteps);

  void AddStep(const StepRecord& step);
  void Clear();
  void SetSelectedStep(std::optional<uint64_t> step);
  void SetViewport(int width, int height);
  // Time ranges (ns, the steps' clock) the viewer had no feed for
  // (ConnectionModel's outages): the lines break across them and a band
  // marks them, instead of drawing straight across as if there were data.
  // end_ns 0: still going on.
  struct Gap {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  void SetGaps(std::vector<Gap> gaps);

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
  RectF bars_rect() const { return bars_area_; }

  // Series colours (also used by tests to find them).
  static constexpr Color kIntervalColor = Rgba(120, 144, 156);
  static constexpr Color kForwardBackwardColor = kComputeColor;
  static constexpr Color kTailColor = Rgba(200, 200, 200);
  static constexpr Color kCommColor = kCollectiveColor;
  static constexpr Color kWaitColor = Rgba(229, 57, 53);
  static constexpr Color kGapColor = Rgba(232, 232, 236);  // an outage's band
  static constexpr Color kGpuComputeColor = kComputeColor;
  static constexpr Color kNcclTransferColor = kCollectiveColor;
  static constexpr Color kNcclWaitColor = kWaitColor;
  static constexpr Color kCopyColor = kGpuCopyColor;
  static constexpr Color kLaunchBoundColor = Rgba(255, 183, 77);
  static constexpr Color kHostSyncColor = Rgba(179, 157, 219);
  static constexpr Color kGpuDataWaitColor = kIntervalColor;
  static constexpr Color kGpuIdleColor = kTailColor;

 private:
  void Rebuild();
  void BuildChart();
  void BuildBars();
  void BuildTopKernels(const StepRecord& step, const RectF& area);
  float StepX(uint64_t step) const;

  size_t max_steps_;
  std::map<uint64_t, StepRecord> steps_;
  std::optional<uint64_t> selected_;
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
  StableScale bar_scale_;  // the bars' time axis, steady across frames
  uint64_t first_step_ = 0;
  uint64_t last_step_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_OVERVIEW_MODEL_H_

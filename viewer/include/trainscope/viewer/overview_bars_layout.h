// The lower half of the training overview: for one step, a stacked bar per
// device of where its time went, as the analysis measured it (data wait,
// compute, communication wait, transfer, idle; a device with GPU work gets
// device time instead: compute kernels, NCCL wait, NCCL transfer not hidden
// behind compute, copies, idle because the CPU launched nothing, idle in a
// host sync, idle waiting for data, the rest), each piece clamped to what
// the step has left so a bar never overshoots, on a time axis that does not
// rescale every frame (StableScale), each CPU bar underlined in its rank's
// line colour. With GPU work, the step's top kernels summed over its
// devices are listed in a table at the right.
//
// Usage:
//   OverviewBarsLayout bars;
//   bars.Lay(step, area, &list);           // each rebuild; keeps the axis steady
//   const auto& b = bars.bars();           // rects and values per device
//   std::string tip = bars.TooltipAt(x, y);
//
// Threading: not thread-safe; the overview's owner (the UI thread) owns it.
#ifndef TRAINSCOPE_VIEWER_OVERVIEW_BARS_LAYOUT_H_
#define TRAINSCOPE_VIEWER_OVERVIEW_BARS_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/stable_scale.h"

namespace trainscope::viewer {

class OverviewBarsLayout {
 public:
  // One piece of a bar, bottom to top.
  struct Segment {
    std::string label;
    int64_t ns = 0;
    Color color = 0;
    RectF rect;
  };

  // One device's stacked bar for the step, in ns and pixels. CPU bars fill
  // the named fields and their segments; GPU bars (gpu) their device-time
  // segments.
  struct DeviceBar {
    bool gpu = false;
    bool selected = false;  // linked selection: the slot tinted, the label blue
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

  // A kernel name over the step's devices.
  struct KernelRow {
    std::string name;
    OpClass op_class = OpClass::kGpuKernel;
    uint32_t count = 0;
    int64_t total_ns = 0;
    std::string launch_op;  // of the device with the largest share
  };
  static constexpr size_t kMaxKernelRows = 10;

  // Lays `step` out: its title and legend above `area`, the bars (and the
  // kernel table) inside it.
  void Lay(const StepRecord& step, const RectF& area, DrawList* list);
  // Forgets the axis (a new job).
  void Reset() { scale_.Reset(); }
  // The devices selected in any view (SelectionState): their slots are
  // tinted and outlined, their labels blue and always shown.
  void SetSelectedRanks(std::set<uint32_t> ranks) { selected_ = std::move(ranks); }

  const std::vector<DeviceBar>& bars() const { return bars_; }
  const std::vector<KernelRow>& kernels() const { return kernels_; }
  // Where the bars are (the area less the kernel table's part).
  const RectF& area() const { return area_; }
  // A bar's segments when (x, y) is over its column; empty otherwise.
  std::string TooltipAt(float x, float y) const;

 private:
  void LayTopKernels(const StepRecord& step, const RectF& area, DrawList* list);

  StableScale scale_;  // the bars' time axis, steady across frames
  std::set<uint32_t> selected_;
  std::vector<DeviceBar> bars_;
  std::vector<KernelRow> kernels_;
  RectF area_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_OVERVIEW_BARS_LAYOUT_H_

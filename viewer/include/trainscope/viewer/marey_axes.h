// What frames the Marey graph's plot: the time axis above it (nice ticks
// since the job's first operator, grid lines, the clock and the span shown,
// the summary line), the step axis below it (step numbers, every k-th so
// labels never overlap, and step boundaries with alternate steps tinted
// while steps are wide enough to tell apart), the pixel map's column
// headers and the legend.
//
// Usage:
//   MareyAxes::AddTimeAxis(view, origin_ns, {.devices = 4, .operators = n, .bins = 100}, &list);
//   size_t shown = MareyAxes::AddStepAxis(view, steps, &list);
//   MareyAxes::AddLegend(view, &list);
//
// Threading: stateless; each call only appends to `list`.
#ifndef TRAINSCOPE_VIEWER_MAREY_AXES_H_
#define TRAINSCOPE_VIEWER_MAREY_AXES_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/marey_view.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct MareyAxes {
  static constexpr Color kStepTintColor = Rgba(240, 243, 248);
  static constexpr Color kStepLabelColor = Rgba(60, 80, 120);
  // Step boundaries are drawn only while a step is at least this wide.
  static constexpr float kMinBoundaryStepPx = 6;

  // For the summary line at the top right.
  struct Summary {
    size_t devices = 0;
    size_t operators = 0;
    uint32_t bins = 0;
  };

  static void AddTimeAxis(const MareyView& view, int64_t origin_ns, const Summary& summary,
                          DrawList* list);
  // Steps on the aligned clock (none on the raw clocks: their boundaries
  // would be drawn where no device had them). Returns the steps whose
  // middle is in view.
  static size_t AddStepAxis(const MareyView& view, const std::map<uint64_t, StepRecord>& steps,
                            DrawList* list);
  static void AddLegend(const MareyView& view, DrawList* list);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_AXES_H_

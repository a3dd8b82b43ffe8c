// The flattened line charts of the Marey graph: each device's FLOPs (solid)
// and peak memory (dashed) per step, drawn above its axis, scaled between
// the smallest and largest value over all devices so a device that differs
// stands out even when every value is large.
//
// Zoomed out until a step is narrower than kMinStepPx (a whole run), the
// steps are aggregated per pixel column (Wei et al.'s binning): the FLOPs
// line goes through each column's mean, the memory line through each
// column's peak (a peak stays a peak), one point per column at its centre,
// drawn with a 1 px pen (Qt's cosmetic stroker, antialiased alike). A frame
// then costs at most one point per pixel column whatever the number of
// steps; two points per step through a 1.3 px pen (outlines tessellated per
// segment) were most of a whole-run frame (issue 23: 145 ms at 1,000
// steps).
//
// The constructor copies each rank's values in view into one flat array
// (time, FLOPs, memory) and Add reads it in order: a whole run of 10,000
// steps is 40,000 values per frame at 4 ranks, and walking the steps' map
// nodes and a per-rank map for each of them was most of the frame's layout
// (issue 23).
//
// Usage:
//   MareyLineCharts charts(view, steps);  // the value ranges, once per frame
//   charts.Add(rank, /*shift=*/0, base_y, height_px, &list);  // per device row
//
// Threading: a plain value; Add only reads it and appends to `list`.
#ifndef TRAINSCOPE_VIEWER_MAREY_LINE_CHARTS_H_
#define TRAINSCOPE_VIEWER_MAREY_LINE_CHARTS_H_

#include <cstdint>
#include <map>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/marey_view.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyLineCharts {
 public:
  static constexpr Color kFlopsColor = Rgba(27, 94, 32);
  static constexpr Color kMemoryColor = Rgba(141, 110, 99);
  // Steps narrower than this (pixels) are aggregated per pixel column.
  static constexpr float kMinStepPx = 3.0f;
  // Pen widths: readable lines zoomed in, the cosmetic 1 px pen aggregated
  // (its cost does not grow with the segments' length in pixels).
  static constexpr float kLineWidth = 1.3f;
  static constexpr float kAggregatedWidth = 1.0f;

  // `steps` must outlive this.
  MareyLineCharts(const MareyView& view, const std::map<uint64_t, StepRecord>& steps);

  // Appends rank's FLOPs and memory lines (those with two points or more)
  // to `list`: values from `base` (pixels, the bottom) up to `base - span`,
  // times moved by `shift` (the raw clock's offset for its device).
  void Add(uint32_t rank, int64_t shift, float base, float span, DrawList* list) const;

  // Whether this frame's steps are aggregated per pixel column.
  bool aggregated() const { return aggregated_; }

 private:
  // One device's value in one step.
  struct Value {
    int64_t start_ns;
    int64_t end_ns;
    double flops;
    double memory;
  };
  // A rank's values in the visible steps, in step order: one pass over the
  // steps per frame, however many rows ask.
  struct Series {
    uint32_t rank;
    std::vector<Value> values;
  };

  const MareyView& view_;
  std::vector<Series> series_;
  double min_flops_ = 1e300, max_flops_ = 0, min_memory_ = 1e300, max_memory_ = 0;
  bool aggregated_ = false;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_LINE_CHARTS_H_

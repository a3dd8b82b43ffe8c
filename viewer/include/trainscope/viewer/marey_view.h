// What the Marey graph shows where: the widget's size, the plot inside the
// margins, and the time range across the plot on the aligned or the raw
// clocks. Every part of a frame (MareyLayout's rows, MareyAxes,
// MareyLineCharts, MareyPixelMap) maps times to pixels through it, and the
// model's hit tests map pixels back.
//
// Usage:
//   MareyView view;
//   view.Resize(1200, 700);
//   view.start = t0, view.end = t1;
//   float x = view.TimeToX(t);
//
// Threading: a plain value.
#ifndef TRAINSCOPE_VIEWER_MAREY_VIEW_H_
#define TRAINSCOPE_VIEWER_MAREY_VIEW_H_

#include <cstdint>

#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

struct MareyView {
  // The plot's margins; the pixel map's three columns sit right of the plot.
  static constexpr float kLeftMargin = 150;
  static constexpr float kTopMargin = 58;
  static constexpr float kBottomMargin = 40;
  static constexpr float kPixelMapColumn = 18;
  static constexpr float kPixelMapGap = 10;
  static constexpr float kRightMargin = kPixelMapGap + 3 * kPixelMapColumn + 8;

  int width = 1000;
  int height = 600;
  RectF plot;
  int64_t start = 0;
  int64_t end = 1;
  bool raw = false;

  // At least 320 x 200; the plot is what the margins leave.
  void Resize(int new_width, int new_height);
  float TimeToX(int64_t t) const;
  int64_t XToTime(float x) const;
  // The left edge of the pixel map's column 0 (FLOPs), 1 (FLOP/s) or 2 (memory).
  float PixelMapX(int column) const {
    return plot.x + plot.w + kPixelMapGap + kPixelMapColumn * static_cast<float>(column);
  }
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_VIEW_H_

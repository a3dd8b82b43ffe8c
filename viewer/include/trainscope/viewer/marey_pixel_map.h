// The Marey graph's pixel map: three columns right of the plot (FLOPs,
// FLOP/s, peak memory) with one cell per row, shaded from pale to dark blue
// by the row's value in the selected step relative to the largest row's.
// A device row shows its device's value, a group's min / avg / max row the
// minimum, mean or maximum over its devices; grey: no value.
//
// Usage:
//   MareyPixelMap::Add(view, rows, step_values, &list);  // rows already placed
//
// Threading: stateless; Add only appends to `list`.
#ifndef TRAINSCOPE_VIEWER_MAREY_PIXEL_MAP_H_
#define TRAINSCOPE_VIEWER_MAREY_PIXEL_MAP_H_

#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/marey_row.h"
#include "trainscope/viewer/marey_view.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct MareyPixelMap {
  static constexpr Color kHighColor = Rgba(21, 67, 150);
  static constexpr Color kLowColor = Rgba(241, 245, 252);
  static constexpr Color kNoValueColor = Rgba(235, 235, 235);

  // `step_values[i]`: row i's devices' values (empty: none).
  static void Add(const MareyView& view, const std::vector<MareyRow>& rows,
                  const std::vector<std::vector<const DeviceStepRecord*>>& step_values,
                  DrawList* list);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_PIXEL_MAP_H_

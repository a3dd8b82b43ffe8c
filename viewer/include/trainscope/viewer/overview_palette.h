// The training overview's colours and legend swatches, shared by its line
// chart and its bars (OverviewModel, OverviewBarsLayout): one colour per
// rank (a device's line above and the key under its bar), one per kind of
// time in a step, and the swatch that names a colour in a legend.
//
// Usage:
//   Color line = OverviewPalette::Rank(3);
//   x += OverviewPalette::AddSwatch(&list, x, y, OverviewPalette::kWaitColor, "comm wait");
//
// Threading: stateless; AddSwatch only appends to `list`.
#ifndef TRAINSCOPE_VIEWER_OVERVIEW_PALETTE_H_
#define TRAINSCOPE_VIEWER_OVERVIEW_PALETTE_H_

#include <cstdint>
#include <string>

#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

struct OverviewPalette {
  static constexpr Color kIntervalColor = Rgba(120, 144, 156);
  static constexpr Color kForwardBackwardColor = kComputeColor;
  static constexpr Color kTailColor = Rgba(200, 200, 200);
  static constexpr Color kCommColor = kCollectiveColor;
  static constexpr Color kWaitColor = Rgba(229, 57, 53);
  static constexpr Color kGapColor = Rgba(232, 232, 236);  // an outage's band
  // The chart while an outage goes on: everything shown may be old.
  static constexpr Color kStaleColor = Rgba(226, 226, 226);
  static constexpr Color kGpuComputeColor = kComputeColor;
  static constexpr Color kNcclTransferColor = kCollectiveColor;
  static constexpr Color kNcclWaitColor = kWaitColor;
  static constexpr Color kCopyColor = kGpuCopyColor;
  static constexpr Color kLaunchBoundColor = Rgba(255, 183, 77);
  static constexpr Color kHostSyncColor = Rgba(179, 157, 219);
  static constexpr Color kGpuDataWaitColor = kIntervalColor;
  static constexpr Color kGpuIdleColor = kTailColor;

  // The rank's line colour (16 colours, repeating).
  static Color Rank(uint32_t rank);
  // A filled square (or with `line`, a short thick line) and its label at
  // (x, y); returns the width it took.
  static float AddSwatch(DrawList* list, float x, float y, Color color, const std::string& label,
                         bool line = false);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_OVERVIEW_PALETTE_H_

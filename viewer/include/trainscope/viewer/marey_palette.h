// The Marey graph's colours for what it draws: an operator's class (the
// paper's palette: compute green, collective yellow, send purple, recv
// blue; kernels as compute, NCCL kernels as collectives, copies teal) and
// the blends its shaded parts use (merged bins, dense rows, the pixel map).
// One copy, so a band, its join and its rasterised pixels always agree.
//
// Usage:
//   Color c = MareyPalette::ForClass(op.cls);
//   Color shade = MareyPalette::Lerp(low, high, fraction);
//
// Threading: stateless.
#ifndef TRAINSCOPE_VIEWER_MAREY_PALETTE_H_
#define TRAINSCOPE_VIEWER_MAREY_PALETTE_H_

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct MareyPalette {
  static Color ForClass(OpClass c);
  // a .. b by f in [0, 1] (clamped), channel by channel, alpha included.
  static Color Lerp(Color a, Color b, double f);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_PALETTE_H_

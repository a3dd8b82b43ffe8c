// A polyline cut into straight segments, so that a painter can draw a wide
// line as separate strokes. Qt's raster engine strokes a whole polyline into
// one outline and fills that, at a cost that grows faster than the line's
// length: the overview's six 600-point lines at 1.5-2.5 px took 66 ms a
// frame that way and 3 ms as segments, and following a live job repaints
// them several times a second (issue 23.5: the viewer runs beside training).
// A dashed line is cut into its dashes here, the pattern running on across
// vertices as a pen's would.
//
// Usage:
//   for (const auto& s : PolylineSegments::Solid(line.points)) painter.drawLine(s.a, s.b);
//   PolylineSegments::Dashed(line.points, 3 * width, 3 * width);  // round-capped dashes
//
// Threading: stateless.
#ifndef TRAINSCOPE_VIEWER_POLYLINE_SEGMENTS_H_
#define TRAINSCOPE_VIEWER_POLYLINE_SEGMENTS_H_

#include <vector>

#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

class PolylineSegments {
 public:
  struct Segment {
    PointF a;
    PointF b;
  };

  // One segment per pair of consecutive points; repeated points add none.
  static std::vector<Segment> Solid(const std::vector<PointF>& points);

  // The pieces of `dash`-long dashes separated by `gap`-long gaps, measured
  // along the line from its first point (a dash around a vertex is two
  // pieces). A dash or gap under 1/1000 px: Solid.
  static std::vector<Segment> Dashed(const std::vector<PointF>& points, float dash, float gap);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_POLYLINE_SEGMENTS_H_

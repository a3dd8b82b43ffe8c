#include "trainscope/viewer/polyline_segments.h"

#include <algorithm>
#include <cmath>

namespace trainscope::viewer {
namespace {

// Pixels: less than this of a dash or a segment is none.
constexpr float kEpsilon = 1e-3f;

}  // namespace

std::vector<PolylineSegments::Segment> PolylineSegments::Solid(const std::vector<PointF>& points) {
  std::vector<Segment> out;
  out.reserve(points.empty() ? 0 : points.size() - 1);
  for (size_t i = 1; i < points.size(); ++i) {
    if (points[i].x == points[i - 1].x && points[i].y == points[i - 1].y) continue;
    out.push_back({points[i - 1], points[i]});
  }
  return out;
}

std::vector<PolylineSegments::Segment> PolylineSegments::Dashed(const std::vector<PointF>& points,
                                                                float dash, float gap) {
  if (!(dash >= kEpsilon) || !(gap >= kEpsilon)) return Solid(points);
  std::vector<Segment> out;
  bool on = true;     // in a dash (else in a gap)
  float left = dash;  // of the current dash or gap
  for (size_t i = 1; i < points.size(); ++i) {
    const PointF a = points[i - 1], b = points[i];
    const float dx = b.x - a.x, dy = b.y - a.y;
    const float length = std::hypot(dx, dy);
    if (!(length > 0)) continue;
    // Each pass uses up the dash or gap or the segment, whichever ends
    // first, so that it always progresses (`at + left` may round to `at`).
    float at = 0;  // along this segment
    while (length - at > kEpsilon) {
      const float step = std::min(left, length - at);
      if (on) {
        const float to = at + step;
        out.push_back({{a.x + dx * at / length, a.y + dy * at / length},
                       {a.x + dx * to / length, a.y + dy * to / length}});
      }
      at += step;
      left -= step;
      if (left <= kEpsilon) {
        on = !on;
        left = on ? dash : gap;
      }
    }
  }
  return out;
}

}  // namespace trainscope::viewer

// Geometry and colours the cluster views share: circles, annular sectors
// and chord ribbons as polygons, curves, point-in-polygon hit tests, the
// efficiency and per-source palettes, and the heat scale of the matrix.
//
// Usage:
//   list.polygons.push_back({Circle(c, 6), EfficiencyColor(0.8)});
//   if (Inside(ribbon.points, x, y)) ...
//
// Threading: pure functions.
#ifndef TRAINSCOPE_VIEWER_CLUSTER_GEOMETRY_H_
#define TRAINSCOPE_VIEWER_CLUSTER_GEOMETRY_H_

#include <cstddef>
#include <vector>

#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr Color kSameHostEdgeColor = Rgba(0, 150, 136);
inline constexpr Color kCrossHostEdgeColor = Rgba(142, 68, 173);

PointF OnCircle(PointF centre, float radius, double angle);
std::vector<PointF> Circle(PointF centre, float radius, int segments = 20);
// The ring sector between two radii and two angles (radians, clockwise from
// 12 o'clock as the views lay them out).
std::vector<PointF> AnnularSector(PointF centre, float inner, float outer, double a0, double a1);
// The same sector as one non-antialiased quad (its chord edges straight):
// what a sector a few pixels wide looks like anyway, at a fraction of the
// cost of a smoothed polygon (1,024 device marks on a ring).
Quad RadialQuad(PointF centre, float inner, float outer, double a0, double a1, Color fill);
// Points along a quadratic Bezier curve from a to b pulled towards c.
std::vector<PointF> Quadratic(PointF a, PointF c, PointF b, int segments = 16);
// A uniform cubic B-spline through control points (clamped ends): the
// hierarchical edge bundling of the Hilbert ring.
std::vector<PointF> BSpline(const std::vector<PointF>& controls, int per_segment = 8);
bool Inside(const std::vector<PointF>& polygon, float x, float y);
// Distance from p to the polyline.
float DistanceToPolyline(const std::vector<PointF>& line, PointF p);
// Green (1: all compute) through yellow to orange-red (0: all waiting).
Color EfficiencyColor(double efficiency);
// A categorical colour per index (ribbons coloured by their source).
Color CategoryColor(size_t index);
Color Darker(Color color, double factor);
// From a (t = 0) to b (t = 1), opaque: a translucent colour over a known
// background as one opaque colour (no blending where shapes overlap).
Color Mix(Color a, Color b, double t);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_CLUSTER_GEOMETRY_H_

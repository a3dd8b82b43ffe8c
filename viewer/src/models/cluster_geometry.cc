#include "trainscope/viewer/cluster_geometry.h"

#include <algorithm>
#include <cmath>

namespace trainscope::viewer {

PointF OnCircle(PointF centre, float radius, double angle) {
  return {centre.x + radius * static_cast<float>(std::sin(angle)),
          centre.y - radius * static_cast<float>(std::cos(angle))};
}

std::vector<PointF> Circle(PointF centre, float radius, int segments) {
  std::vector<PointF> out;
  out.reserve(segments);
  for (int i = 0; i < segments; ++i)
    out.push_back(OnCircle(centre, radius, 2 * kPi * i / segments));
  return out;
}

std::vector<PointF> AnnularSector(PointF centre, float inner, float outer, double a0, double a1) {
  const int segments = std::clamp(static_cast<int>(std::abs(a1 - a0) / (kPi / 90)) + 1, 1, 180);
  std::vector<PointF> out;
  out.reserve(2 * (segments + 1));
  for (int i = 0; i <= segments; ++i)
    out.push_back(OnCircle(centre, outer, a0 + (a1 - a0) * i / segments));
  for (int i = segments; i >= 0; --i)
    out.push_back(OnCircle(centre, inner, a0 + (a1 - a0) * i / segments));
  return out;
}

Quad RadialQuad(PointF centre, float inner, float outer, double a0, double a1, Color fill) {
  Quad q;
  q.p[0] = OnCircle(centre, outer, a0);
  q.p[1] = OnCircle(centre, outer, a1);
  q.p[2] = OnCircle(centre, inner, a1);
  q.p[3] = OnCircle(centre, inner, a0);
  q.fill = fill;
  q.smooth = false;
  return q;
}

std::vector<PointF> Quadratic(PointF a, PointF c, PointF b, int segments) {
  std::vector<PointF> out;
  out.reserve(segments + 1);
  for (int i = 0; i <= segments; ++i) {
    const float t = static_cast<float>(i) / static_cast<float>(segments);
    const float u = 1 - t;
    out.push_back(
        {u * u * a.x + 2 * u * t * c.x + t * t * b.x, u * u * a.y + 2 * u * t * c.y + t * t * b.y});
  }
  return out;
}

std::vector<PointF> BSpline(const std::vector<PointF>& controls, int per_segment) {
  if (controls.size() < 3) return controls;
  // Clamp: repeat the ends so the curve starts and ends on them.
  std::vector<PointF> p;
  p.push_back(controls.front());
  p.push_back(controls.front());
  p.insert(p.end(), controls.begin(), controls.end());
  p.push_back(controls.back());
  p.push_back(controls.back());
  std::vector<PointF> out;
  for (size_t i = 0; i + 3 < p.size(); ++i) {
    for (int s = 0; s < per_segment; ++s) {
      const float t = static_cast<float>(s) / static_cast<float>(per_segment);
      const float b0 = (1 - t) * (1 - t) * (1 - t) / 6;
      const float b1 = (3 * t * t * t - 6 * t * t + 4) / 6;
      const float b2 = (-3 * t * t * t + 3 * t * t + 3 * t + 1) / 6;
      const float b3 = t * t * t / 6;
      out.push_back({b0 * p[i].x + b1 * p[i + 1].x + b2 * p[i + 2].x + b3 * p[i + 3].x,
                     b0 * p[i].y + b1 * p[i + 1].y + b2 * p[i + 2].y + b3 * p[i + 3].y});
    }
  }
  out.push_back(controls.back());
  return out;
}

bool Inside(const std::vector<PointF>& polygon, float x, float y) {
  bool inside = false;
  for (size_t i = 0, j = polygon.size() - 1; i < polygon.size(); j = i++) {
    const PointF& a = polygon[i];
    const PointF& b = polygon[j];
    if ((a.y > y) != (b.y > y) && x < (b.x - a.x) * (y - a.y) / (b.y - a.y) + a.x) inside = !inside;
  }
  return inside;
}

float DistanceToPolyline(const std::vector<PointF>& line, PointF p) {
  float best = 1e30f;
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const PointF a = line[i], b = line[i + 1];
    const float dx = b.x - a.x, dy = b.y - a.y;
    const float len2 = dx * dx + dy * dy;
    float t = len2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / len2 : 0;
    t = std::clamp(t, 0.0f, 1.0f);
    const float ex = a.x + t * dx - p.x, ey = a.y + t * dy - p.y;
    best = std::min(best, std::sqrt(ex * ex + ey * ey));
  }
  if (line.size() == 1) best = std::hypot(line[0].x - p.x, line[0].y - p.y);
  return best;
}

Color EfficiencyColor(double efficiency) {
  const double e = std::clamp(efficiency, 0.0, 1.0);
  auto mix = [](double a, double b, double t) { return static_cast<uint32_t>(a + (b - a) * t); };
  if (e >= 0.5) {
    const double t = (e - 0.5) / 0.5;  // yellow -> green
    return Rgba(mix(240, 67, t), mix(190, 160, t), mix(40, 71, t));
  }
  const double t = e / 0.5;  // orange-red -> yellow
  return Rgba(mix(230, 240, t), mix(81, 190, t), mix(0, 40, t));
}

Color CategoryColor(size_t index) {
  // Tableau 10 without its red (red means slow or alerting here).
  static constexpr Color kPalette[] = {
      Rgba(78, 121, 167),  Rgba(242, 142, 43), Rgba(118, 183, 178),
      Rgba(89, 161, 79),   Rgba(237, 201, 72), Rgba(176, 122, 161),
      Rgba(255, 157, 167), Rgba(156, 117, 95), Rgba(186, 176, 172)};
  return kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

Color Darker(Color color, double factor) {
  auto scale = [&](uint32_t shift) {
    return static_cast<uint32_t>(((color >> shift) & 0xFF) * factor) << shift;
  };
  return (color & 0xFF000000u) | scale(16) | scale(8) | scale(0);
}

Color Mix(Color a, Color b, double t) {
  auto ch = [&](int shift) {
    const double x = static_cast<double>((a >> shift) & 0xFF);
    const double y = static_cast<double>((b >> shift) & 0xFF);
    return static_cast<uint32_t>(x + (y - x) * std::clamp(t, 0.0, 1.0));
  };
  return Rgba(ch(16), ch(8), ch(0));
}

}  // namespace trainscope::viewer

#include "trainscope/viewer/widgets/draw_list_painter.h"

#include <QImage>
#include <QLineF>
#include <QPolygonF>
#include <QString>
#include <algorithm>
#include <cmath>
#include <vector>

#include "trainscope/viewer/polyline_segments.h"

namespace trainscope::viewer {
namespace {

void PaintRects(QPainter* painter, const std::vector<FilledRect>& rects) {
  for (const FilledRect& r : rects) {
    const QRectF rect(r.rect.x, r.rect.y, r.rect.w, r.rect.h);
    if ((r.fill >> 24) != 0) painter->fillRect(rect, DrawListPainter::ToQColor(r.fill));
    if ((r.stroke >> 24) != 0) {
      painter->setPen(QPen(DrawListPainter::ToQColor(r.stroke), 1));
      painter->setBrush(Qt::NoBrush);
      painter->drawRect(rect);
    }
  }
}

void PaintImage(QPainter* painter, const PixelImage& image) {
  if (image.pixels.empty() || image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height) {
    return;
  }
  const QImage qimage(reinterpret_cast<const uchar*>(image.pixels.data()), image.width,
                      image.height, image.width * 4, QImage::Format_ARGB32_Premultiplied);
  painter->drawImage(QRectF(image.dest.x, image.dest.y, image.dest.w, image.dest.h), qimage);
}

// Qt's raster engine hands a fill of about 96 scanlines or more to its
// thread pool and waits for it. For the Marey graph's few hundred tall
// translucent join bands per frame the hand-offs (a futex wake and wait
// each) cost more than the filling, and on a loaded machine the wait was
// most of a whole-run frame's wall time (issue 23). So an aliased convex
// polygon taller than this is filled in horizontal strips cut at whole
// pixels, on the calling thread: no pixel centre lies on a cut, so each
// pixel is filled by one strip, as by the whole polygon (but for a pixel at
// a rounding tie on a slanted edge).
constexpr double kStripPx = 64;

// `in` (convex, n points) clipped to y >= y0 (keep_below) or y <= y0.
int ClipAtY(const QPointF* in, int n, double y0, bool keep_below, QPointF* out) {
  int m = 0;
  for (int i = 0; i < n; ++i) {
    const QPointF& a = in[i];
    const QPointF& b = in[(i + 1) % n];
    const bool a_in = keep_below ? a.y() >= y0 : a.y() <= y0;
    const bool b_in = keep_below ? b.y() >= y0 : b.y() <= y0;
    if (a_in) out[m++] = a;
    if (a_in != b_in) {
      const double t = (y0 - a.y()) / (b.y() - a.y());
      out[m++] = QPointF(a.x() + (b.x() - a.x()) * t, y0);
    }
  }
  return m;
}

// A quad, aliased: in strips of at most kStripPx scanlines.
void FillAliasedQuad(QPainter* painter, const QPointF* points) {
  double top = points[0].y(), bottom = points[0].y();
  for (int i = 1; i < 4; ++i) {
    top = std::min(top, points[i].y());
    bottom = std::max(bottom, points[i].y());
  }
  if (bottom - top <= kStripPx) {
    painter->drawConvexPolygon(points, 4);
    return;
  }
  // Clipping a convex quad to a slab adds at most two points per cut.
  QPointF below[6], strip[8];
  for (double y0 = top; y0 < bottom;) {
    const double y1 = std::min(bottom, std::floor(y0) + kStripPx);
    const int n = ClipAtY(points, 4, y0, /*keep_below=*/true, below);
    const int m = ClipAtY(below, n, y1, /*keep_below=*/false, strip);
    if (m >= 3) painter->drawConvexPolygon(strip, m);
    y0 = y1;
  }
}

QPen MakePen(Color color, float width, bool dashed) {
  QPen pen(DrawListPainter::ToQColor(color), width);
  if (dashed) pen.setStyle(Qt::DashLine);
  pen.setCapStyle(Qt::FlatCap);
  return pen;
}

}  // namespace

void DrawListPainter::Paint(QPainter* painter, const DrawList& list) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing, false);
  PaintRects(painter, list.backgrounds);
  // Nearest neighbour: a scaled-up 8x8 map must show its 64 pixels.
  painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
  PaintImage(painter, list.image);
  for (const PixelImage& image : list.images) PaintImage(painter, image);
  if (!list.quads.empty()) {
    // Antialiased only while few, and only the quads that ask for it: a
    // long band across other rows costs many times a short one smoothed.
    const bool few = list.quads.size() < 2'000;
    bool smooth = false;
    painter->setRenderHint(QPainter::Antialiasing, false);
    painter->setPen(Qt::NoPen);
    QPointF points[4];
    for (const Quad& quad : list.quads) {
      if ((few && quad.smooth) != smooth) {
        smooth = few && quad.smooth;
        painter->setRenderHint(QPainter::Antialiasing, smooth);
      }
      for (int i = 0; i < 4; ++i) points[i] = QPointF(quad.p[i].x, quad.p[i].y);
      painter->setBrush(ToQColor(quad.fill));
      if (smooth) {
        painter->drawConvexPolygon(points, 4);
      } else {
        FillAliasedQuad(painter, points);
      }
    }
    painter->setRenderHint(QPainter::Antialiasing, false);
  }
  if (!list.polygons.empty()) {
    bool smooth = true;
    painter->setRenderHint(QPainter::Antialiasing, true);
    QPolygonF polygon;
    for (const Polygon& p : list.polygons) {
      if (p.smooth != smooth) {
        smooth = p.smooth;
        painter->setRenderHint(QPainter::Antialiasing, smooth);
      }
      polygon.clear();
      polygon.reserve(static_cast<qsizetype>(p.points.size()));
      for (const PointF& point : p.points) polygon.append(QPointF(point.x, point.y));
      painter->setBrush((p.fill >> 24) != 0 ? QBrush(ToQColor(p.fill)) : QBrush(Qt::NoBrush));
      if ((p.stroke >> 24) != 0) {
        painter->setPen(MakePen(p.stroke, p.stroke_width, false));
      } else {
        painter->setPen(Qt::NoPen);
      }
      painter->drawPolygon(polygon);
    }
    painter->setRenderHint(QPainter::Antialiasing, false);
  }
  PaintRects(painter, list.rects);
  PaintRects(painter, list.overlay_rects);
  painter->setRenderHint(QPainter::Antialiasing, true);
  std::vector<QPointF> points;
  std::vector<QLineF> segments;
  for (const Polyline& line : list.polylines) {
    painter->setRenderHint(QPainter::Antialiasing, line.smooth);
    if (line.width > 1 && (line.color >> 24) == 0xFF) {
      // Wide: as separate square-capped segments (PolylineSegments says
      // why); the caps fill the joins (round ones cost 4 times as much).
      // Only when opaque, as a translucent line would show each overlapping
      // cap darker. Dashes: 3w long with 3w gaps, so the caps make them
      // Qt::DashLine's 4w with 2w gaps.
      const std::vector<PolylineSegments::Segment> pieces =
          line.dashed ? PolylineSegments::Dashed(line.points, 3 * line.width, 3 * line.width)
                      : PolylineSegments::Solid(line.points);
      segments.clear();
      segments.reserve(pieces.size());
      for (const auto& s : pieces) segments.emplace_back(s.a.x, s.a.y, s.b.x, s.b.y);
      QPen pen(ToQColor(line.color), line.width);
      pen.setCapStyle(Qt::SquareCap);
      painter->setPen(pen);
      painter->drawLines(segments.data(), static_cast<int>(segments.size()));
      continue;
    }
    points.clear();
    points.reserve(line.points.size());
    for (const PointF& p : line.points) points.emplace_back(p.x, p.y);
    painter->setPen(MakePen(line.color, line.width, line.dashed));
    painter->drawPolyline(points.data(), static_cast<int>(points.size()));
  }
  for (const Line& line : list.lines) {
    painter->setRenderHint(QPainter::Antialiasing, line.a.x != line.b.x && line.a.y != line.b.y);
    painter->setPen(MakePen(line.color, line.width, line.dashed));
    painter->drawLine(QPointF(line.a.x, line.a.y), QPointF(line.b.x, line.b.y));
  }
  painter->setRenderHint(QPainter::Antialiasing, true);
  for (const Cross& cross : list.crosses) {
    QPen pen(ToQColor(cross.color), cross.width);
    pen.setCapStyle(Qt::RoundCap);
    painter->setPen(pen);
    const float s = cross.half_size;
    painter->drawLine(QPointF(cross.centre.x - s, cross.centre.y - s),
                      QPointF(cross.centre.x + s, cross.centre.y + s));
    painter->drawLine(QPointF(cross.centre.x - s, cross.centre.y + s),
                      QPointF(cross.centre.x + s, cross.centre.y - s));
  }
  QFont base = painter->font();
  if (base.pointSizeF() <= 0 || base.pointSizeF() > 9) base.setPointSizeF(8.5);
  for (const Text& text : list.texts) {
    QFont font = base;
    if (text.point_size > 0) font.setPointSizeF(text.point_size);
    font.setBold(text.bold);
    painter->setFont(font);
    painter->setPen(ToQColor(text.color));
    const QString s = QString::fromStdString(text.text);
    const int align = text.align == Text::Align::kLeft    ? Qt::AlignLeft
                      : text.align == Text::Align::kRight ? Qt::AlignRight
                                                          : Qt::AlignHCenter;
    constexpr double kWide = 2000;
    const double left = text.align == Text::Align::kLeft    ? 0
                        : text.align == Text::Align::kRight ? -kWide
                                                            : -kWide / 2;
    if (text.vertical) {
      painter->save();
      painter->translate(text.x, text.y);
      painter->rotate(-90);
      painter->drawText(QRectF(left, -10, kWide, 20), align | Qt::AlignVCenter, s);
      painter->restore();
    } else {
      painter->drawText(QRectF(text.x + left, text.y - 10, kWide, 20), align | Qt::AlignVCenter, s);
    }
  }
  painter->restore();
}

}  // namespace trainscope::viewer

// DrawListPainter's wide polylines, painted as segments (PolylineSegments:
// a whole wide polyline stroked at once cost 66 ms a frame in the overview):
// the joins of a zig-zag are filled, a dashed line keeps Qt::DashLine's
// 4:2 pattern, and a translucent line is not darker where segments meet.
#include "trainscope/viewer/widgets/draw_list_painter.h"

#include <gtest/gtest.h>

#include <QImage>
#include <QPainter>
#include <array>
#include <vector>

#include "test_application.h"

namespace trainscope::viewer {
namespace {

class DrawListPainterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  static QImage Paint(const DrawList& list) {
    QImage image(200, 100, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
    return image;
  }
  static bool Inked(const QImage& image, int x, int y) {
    return qRed(image.pixel(x, y)) < 200 || qGreen(image.pixel(x, y)) < 200;
  }
};

TEST_F(DrawListPainterTest, AWideZigZagIsUnbrokenAtItsJoins) {
  DrawList list;
  Polyline line;
  line.color = Rgba(20, 20, 160);
  line.width = 2.5f;
  for (int i = 0; i <= 10; ++i) line.points.push_back({10.0f + 18 * i, i % 2 == 0 ? 20.0f : 80.0f});
  list.polylines.push_back(line);
  const QImage image = Paint(list);
  // Every vertex and the middle of every segment are inked.
  for (int i = 0; i <= 10; ++i) {
    const int x = 10 + 18 * i, y = i % 2 == 0 ? 20 : 80;
    EXPECT_TRUE(Inked(image, x, y)) << "vertex " << i;
    if (i > 0) EXPECT_TRUE(Inked(image, x - 9, 50)) << "segment " << i;
  }
  EXPECT_FALSE(Inked(image, 10, 80));  // nothing where the line is not
}

TEST_F(DrawListPainterTest, AWideDashedLineKeepsTheDashPatternAlongTheLine) {
  DrawList list;
  Polyline line;
  line.color = Rgba(200, 30, 30);
  line.width = 2;
  line.dashed = true;
  // Many short steps, as a chart of many steps draws: the pattern must run
  // on across them (Qt::DashLine: 8-px dashes, 4-px gaps at width 2).
  for (int x = 10; x <= 190; x += 2) line.points.push_back({static_cast<float>(x), 50});
  list.polylines.push_back(line);
  const QImage image = Paint(list);
  int inked = 0, gaps = 0;
  bool was_inked = true;
  for (int x = 12; x < 188; ++x) {
    const bool on = Inked(image, x, 50);
    inked += on ? 1 : 0;
    if (was_inked && !on) ++gaps;
    was_inked = on;
  }
  const double share = inked / 176.0;
  EXPECT_GT(share, 0.55);
  EXPECT_LT(share, 0.8);
  EXPECT_GE(gaps, 12);  // ~176 / 12 periods
  EXPECT_LE(gaps, 16);
}

TEST_F(DrawListPainterTest, ATranslucentWideLineIsEvenWhereItsSegmentsMeet) {
  DrawList list;
  Polyline line;
  line.color = WithAlpha(Rgba(0, 0, 0), 100);
  line.width = 3;
  for (int x = 10; x <= 190; x += 20) line.points.push_back({static_cast<float>(x), 50});
  list.polylines.push_back(line);
  const QImage image = Paint(list);
  // A vertex (x = 50) is no darker than between vertices (x = 60).
  EXPECT_EQ(qRed(image.pixel(50, 50)), qRed(image.pixel(60, 50)));
}

// An aliased quad taller than Qt's threaded-fill threshold is filled in
// strips (no hand-off to Qt's thread pool per band): the picture must be
// the whole quad's, no strip boundary darker (overlap) or lighter (gap)
// under a translucent fill, whatever the quad's slant and fractional
// corners. A strip's cut edge starts at an interpolated point, which Qt
// rounds to its fixed point, so a pixel exactly at a tie on a slanted edge
// may flip: at most one pixel per row, a few per quad; a seam would be a
// whole row.
TEST_F(DrawListPainterTest, ATallAliasedQuadIsFilledAsAWhole) {
  const std::vector<std::array<PointF, 4>> shapes = {
      {{{20.3f, 10.6f}, {60.2f, 10.6f}, {170.7f, 390.2f}, {90.1f, 390.2f}}},  // a join band
      {{{100, 5.5f}, {190.5f, 150}, {110, 395.25f}, {15.75f, 200}}},          // a rotated one
      {{{10, 0.5f}, {30, 0.5f}, {30, 380}, {10, 380}}},                       // upright
  };
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto& corners = shapes[k];
    DrawList list;
    Quad quad;
    for (int i = 0; i < 4; ++i) quad.p[i] = corners[i];
    quad.fill = WithAlpha(Rgba(46, 125, 50), 45);
    quad.smooth = false;
    list.quads.push_back(quad);
    QImage strips(200, 400, QImage::Format_ARGB32_Premultiplied);
    strips.fill(Qt::white);
    {
      QPainter painter(&strips);
      DrawListPainter::Paint(&painter, list);
    }
    QImage whole(200, 400, QImage::Format_ARGB32_Premultiplied);
    whole.fill(Qt::white);
    {
      QPainter painter(&whole);
      painter.setRenderHint(QPainter::Antialiasing, false);
      painter.setPen(Qt::NoPen);
      painter.setBrush(DrawListPainter::ToQColor(quad.fill));
      QPointF points[4];
      for (int i = 0; i < 4; ++i) points[i] = QPointF(corners[i].x, corners[i].y);
      painter.drawConvexPolygon(points, 4);
    }
    int filled = 0, different = 0;
    for (int y = 0; y < 400; ++y) {
      int in_row = 0;
      for (int x = 0; x < 200; ++x) {
        filled += whole.pixel(x, y) != qRgb(255, 255, 255);
        in_row += strips.pixel(x, y) != whole.pixel(x, y);
      }
      EXPECT_LE(in_row, 1) << "shape " << k << " row " << y;
      different += in_row;
    }
    EXPECT_LE(different, 4) << "shape " << k;
    EXPECT_GT(filled, 5000) << "shape " << k;  // the quad was painted at all
  }
}

}  // namespace
}  // namespace trainscope::viewer

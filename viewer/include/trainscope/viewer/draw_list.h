// What a model wants painted, in pixels: the models precompute this once per
// change (data, size, zoom) so that painting a frame is one pass over flat
// arrays with no decisions left. The widgets turn it into QPainter calls
// (DrawListPainter); tests inspect it without a screen.
//
// Usage:
//   DrawList list;
//   list.rects.push_back({{x, y, w, h}, kComputeGreen});
//   painter.Paint(list);  // in order: backgrounds, image, images, quads, polygons, rects,
//                         // overlay_rects, polylines, lines, crosses, texts
//
// Threading: a plain value.
#ifndef TRAINSCOPE_VIEWER_DRAW_LIST_H_
#define TRAINSCOPE_VIEWER_DRAW_LIST_H_

#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::viewer {

// 0xAARRGGBB.
using Color = uint32_t;

constexpr Color Rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a = 255) {
  return (a << 24) | (r << 16) | (g << 8) | b;
}
constexpr Color WithAlpha(Color c, uint32_t a) { return (c & 0x00FFFFFFu) | (a << 24); }

// The paper's palette.
inline constexpr Color kComputeColor = Rgba(76, 175, 80);      // green
inline constexpr Color kMergedColor = Rgba(46, 125, 50);       // darker green
inline constexpr Color kCollectiveColor = Rgba(240, 190, 30);  // yellow
inline constexpr Color kSendColor = Rgba(142, 68, 173);        // purple
inline constexpr Color kRecvColor = Rgba(41, 128, 185);        // blue
inline constexpr Color kGpuCopyColor = Rgba(0, 150, 136);      // teal: memcpy and memset
inline constexpr Color kAlertColor = Rgba(220, 30, 30);        // red cross
inline constexpr Color kSelectColor = Rgba(25, 118, 210);      // linked selection: blue
inline constexpr Color kSelectTintColor = Rgba(214, 232, 250);  // behind what it selects
inline constexpr Color kAxisColor = Rgba(90, 90, 90);
inline constexpr Color kGridColor = Rgba(225, 225, 225);
inline constexpr Color kTextColor = Rgba(30, 30, 30);
inline constexpr Color kBackgroundColor = Rgba(255, 255, 255);

struct PointF {
  float x = 0;
  float y = 0;
};

struct RectF {
  float x = 0;
  float y = 0;
  float w = 0;
  float h = 0;
  bool Contains(float px, float py) const { return px >= x && px < x + w && py >= y && py < y + h; }
};

struct FilledRect {
  RectF rect;
  Color fill = 0;
  Color stroke = 0;  // alpha 0: no outline
};

// A band between two axes: top edge (x0..x1 at y_top), bottom edge (x2..x3
// at y_bottom).
struct Quad {
  PointF p[4];  // clockwise: top-left, top-right, bottom-right, bottom-left
  Color fill = 0;
  bool smooth = true;  // antialias it (when the list has few quads)
};

struct Line {
  PointF a;
  PointF b;
  Color color = kAxisColor;
  float width = 1;
  bool dashed = false;
};

struct Polyline {
  std::vector<PointF> points;
  Color color = kAxisColor;
  float width = 1;
  bool dashed = false;
  // Antialiased. A line of one point pair per pixel column (an aggregated
  // chart) gains nothing from it and costs several times as much to paint.
  bool smooth = true;
};

struct Text {
  enum class Align : uint8_t { kLeft, kCenter, kRight };
  float x = 0;
  float y = 0;  // baseline centre: the text is vertically centred on y
  std::string text;
  Color color = kTextColor;
  Align align = Align::kLeft;
  bool bold = false;
  float point_size = 0;   // 0: the painter's default
  bool vertical = false;  // rotated 90 degrees counter-clockwise
};

// A filled, optionally outlined polygon, antialiased unless `smooth` is
// off (the cluster views' nodes, arcs and ribbons; a large fill smoothed
// costs several times one that is not).
struct Polygon {
  std::vector<PointF> points;
  Color fill = 0;
  Color stroke = 0;  // alpha 0: no outline
  float stroke_width = 1;
  bool smooth = true;
};

struct Cross {
  PointF centre;
  float half_size = 5;
  Color color = kAlertColor;
  float width = 2.5f;
};

// A pixel buffer scaled onto `dest` (dense rows of the Marey graph, the
// loss views' thumbnails and maps), nearest neighbour: no smoothing, so a
// tiny map scaled up shows its pixels.
struct PixelImage {
  RectF dest;
  int width = 0;
  int height = 0;
  std::vector<Color> pixels;  // row-major, width * height
};

struct DrawList {
  std::vector<FilledRect> backgrounds;
  PixelImage image;
  std::vector<PixelImage> images;
  std::vector<Quad> quads;
  std::vector<Polygon> polygons;
  std::vector<FilledRect> rects;
  std::vector<FilledRect> overlay_rects;
  std::vector<Polyline> polylines;
  std::vector<Line> lines;
  std::vector<Cross> crosses;
  std::vector<Text> texts;

  void Clear() {
    backgrounds.clear();
    image = {};
    images.clear();
    quads.clear();
    polygons.clear();
    rects.clear();
    overlay_rects.clear();
    polylines.clear();
    lines.clear();
    crosses.clear();
    texts.clear();
  }
  size_t PrimitiveCount() const {
    return backgrounds.size() + quads.size() + polygons.size() + rects.size() +
           overlay_rects.size() + polylines.size() + lines.size() + crosses.size() + texts.size() +
           images.size() + (image.pixels.empty() ? 0 : 1);
  }
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_DRAW_LIST_H_

// Paints a model's DrawList with QPainter, in the list's fixed order. The
// only place where model geometry meets Qt.
//
// Usage:
//   QPainter painter(this);
//   DrawListPainter::Paint(&painter, model.Draw());
//
// Threading: the thread that owns the paint device.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_DRAW_LIST_PAINTER_H_
#define TRAINSCOPE_VIEWER_WIDGETS_DRAW_LIST_PAINTER_H_

#include <QColor>
#include <QPainter>

#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

class DrawListPainter {
 public:
  static void Paint(QPainter* painter, const DrawList& list);
  static QColor ToQColor(Color color) { return QColor::fromRgba(color); }
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_DRAW_LIST_PAINTER_H_

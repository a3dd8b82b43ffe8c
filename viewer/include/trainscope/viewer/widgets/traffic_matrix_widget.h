// Paints a TrafficMatrixLayout (the NodeTrix-style device-pair matrix);
// hovering a cell names the pair and its figures, a row bar its totals, a
// box plot its link.
//
// Usage:
//   auto* matrix = new TrafficMatrixWidget(&state.traffic_matrix, parent);
//   matrix->update();  // after the traffic model changed
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_TRAFFIC_MATRIX_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_TRAFFIC_MATRIX_WIDGET_H_

#include <QWidget>

#include "trainscope/viewer/traffic_matrix_layout.h"

namespace trainscope::viewer {

class TrafficMatrixWidget : public QWidget {
  Q_OBJECT

 public:
  explicit TrafficMatrixWidget(TrafficMatrixLayout* layout, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 800}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  TrafficMatrixLayout* layout_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_TRAFFIC_MATRIX_WIDGET_H_

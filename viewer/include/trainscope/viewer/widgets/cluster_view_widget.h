// Paints any cluster view (topology, trends, chord diagram, Hilbert ring:
// a ClusterView) and routes the mouse to it: hover shows the element's
// details, a click selects a link or a unit, a drag with the right button
// (or Shift + left) draws a lasso that selects the devices inside. A level
// box (device, host, rack) at the top right aggregates the view.
// selectionChanged() tells the window to sync every linked view.
//
// Usage:
//   auto* topology = new ClusterViewWidget(&state.topology, parent);
//   connect(topology, &ClusterViewWidget::selectionChanged, ...);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_CLUSTER_VIEW_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_CLUSTER_VIEW_WIDGET_H_

#include <QWidget>
#include <vector>

#include "trainscope/viewer/cluster_view.h"

class QComboBox;

namespace trainscope::viewer {

class ClusterViewWidget : public QWidget {
  Q_OBJECT

 public:
  explicit ClusterViewWidget(ClusterView* view, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 800}; }
  ClusterView* view() const { return view_; }
  QComboBox* level_box() const { return level_; }

 signals:
  void selectionChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  ClusterView* view_;
  QComboBox* level_;
  std::vector<PointF> lasso_;
  bool lassoing_ = false;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_CLUSTER_VIEW_WIDGET_H_

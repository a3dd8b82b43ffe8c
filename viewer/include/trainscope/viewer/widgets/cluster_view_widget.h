// Paints any cluster view (topology, trends, chord diagram, Hilbert ring:
// a ClusterView) and routes the mouse to it: hover shows the element's
// details, a click selects a link or a unit, a drag with the right button
// (or Shift + left) draws a lasso that selects the devices inside. A level
// box (device, host, rack) at the top right aggregates the view.
// selectionChanged() tells the window to sync every linked view.
// Views that zoom (the Hilbert ring: a click on a block zooms in) back out
// on Esc, Backspace or the mouse's back button; views that filter get a
// filter box beside the level box (a refused filter turns it red, the
// reason in its tooltip). When a view lays out anew (the chord diagram on
// new traffic), the widget animates from the old layout to the new over
// kTransitionMs.
//
// Usage:
//   auto* topology = new ClusterViewWidget(&state.topology, parent);
//   connect(topology, &ClusterViewWidget::selectionChanged, ...);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_CLUSTER_VIEW_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_CLUSTER_VIEW_WIDGET_H_

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "trainscope/viewer/cluster_view.h"

class QComboBox;
class QLineEdit;

namespace trainscope::viewer {

class ClusterViewWidget : public QWidget {
  Q_OBJECT

 public:
  explicit ClusterViewWidget(ClusterView* view, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 800}; }
  ClusterView* view() const { return view_; }
  QComboBox* level_box() const { return level_; }
  QLineEdit* filter_box() const { return filter_; }  // null unless the view filters
  bool animating() const { return animation_.isActive(); }

  static constexpr int kTransitionMs = 200;

 signals:
  void selectionChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private slots:
  void ApplyFilter();

 private:
  ClusterView* view_;
  QComboBox* level_;
  QLineEdit* filter_ = nullptr;
  QTimer animation_;
  QElapsedTimer clock_;
  uint64_t seen_transitions_ = 0;
  std::vector<PointF> lasso_;
  bool lassoing_ = false;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_CLUSTER_VIEW_WIDGET_H_

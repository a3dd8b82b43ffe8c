// Paints an OverviewModel; a click on the line chart selects that step
// everywhere (stepClicked), a shift-click ends a step range for the range
// statistics there (stepShiftClicked), hovering shows the step's or the
// bar's values.
//
// Usage:
//   OverviewWidget* overview = new OverviewWidget(&state.overview, parent);
//   connect(overview, &OverviewWidget::stepClicked, ...);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_OVERVIEW_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_OVERVIEW_WIDGET_H_

#include <QWidget>

#include "trainscope/viewer/overview_model.h"

namespace trainscope::viewer {

class OverviewWidget : public QWidget {
  Q_OBJECT

 public:
  explicit OverviewWidget(OverviewModel* model, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 420}; }

 signals:
  void stepClicked(quint64 step);
  void stepShiftClicked(quint64 step);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  OverviewModel* model_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_OVERVIEW_WIDGET_H_

// Paints the LossModel's Selection View: the job-wide difficult items as a
// grid of thumbnails with label, prediction and contribution, candidates
// framed red. A click on a cell chooses that item for the Monitoring View
// (itemClicked); hovering shows the item's history. When the cells do not
// fit at a readable size the grid scrolls vertically.
//
// Usage:
//   SelectionView* selection = new SelectionView(&state.loss, parent);
//   connect(selection, &SelectionView::itemClicked, ...);
//   selection->Refresh();  // after the model changed
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_SELECTION_VIEW_H_
#define TRAINSCOPE_VIEWER_WIDGETS_SELECTION_VIEW_H_

#include <QAbstractScrollArea>

#include "trainscope/viewer/loss_model.h"

namespace trainscope::viewer {

class SelectionView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  explicit SelectionView(LossModel* model, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 420}; }
  // Lays the grid out for the visible area, sets the scroll range, repaints.
  void Refresh();

 signals:
  void itemClicked(quint64 item);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  LossModel* model_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_SELECTION_VIEW_H_

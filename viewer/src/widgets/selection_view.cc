#include "trainscope/viewer/widgets/selection_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <cmath>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {

SelectionView::SelectionView(LossModel* model, QWidget* parent)
    : QAbstractScrollArea(parent), model_(model) {
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(360, 220);
}

void SelectionView::Refresh() {
  // The layout fits the visible area; what does not fit scrolls.
  const QSize visible = viewport()->size();
  model_->SetSelectionViewport(visible.width(), visible.height());
  model_->DrawSelection();
  const int content = static_cast<int>(std::ceil(model_->selection_content_height()));
  verticalScrollBar()->setRange(0, std::max(0, content - visible.height()));
  verticalScrollBar()->setPageStep(visible.height());
  verticalScrollBar()->setSingleStep(40);
  viewport()->update();
}

void SelectionView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  Refresh();
}

void SelectionView::paintEvent(QPaintEvent*) {
  const QSize visible = viewport()->size();
  model_->SetSelectionViewport(visible.width(), visible.height());
  const DrawList& list = model_->DrawSelection();
  QPainter painter(viewport());
  painter.fillRect(viewport()->rect(), Qt::white);
  painter.translate(0, -verticalScrollBar()->value());
  DrawListPainter::Paint(&painter, list);
}

void SelectionView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPointF p = event->position();
  const float y = static_cast<float>(p.y() + verticalScrollBar()->value());
  if (std::optional<uint64_t> item = model_->ItemAt(static_cast<float>(p.x()), y)) {
    emit itemClicked(*item);
  }
}

void SelectionView::mouseMoveEvent(QMouseEvent* event) {
  const QPointF p = event->position();
  const float y = static_cast<float>(p.y() + verticalScrollBar()->value());
  const std::string text = model_->TooltipAt(static_cast<float>(p.x()), y);
  if (text.empty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), QString::fromStdString(text), this);
  }
}

}  // namespace trainscope::viewer

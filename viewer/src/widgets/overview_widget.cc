#include "trainscope/viewer/widgets/overview_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {

OverviewWidget::OverviewWidget(OverviewModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setMinimumSize(480, 300);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void OverviewWidget::paintEvent(QPaintEvent*) {
  model_->SetViewport(width(), height());
  QPainter painter(this);
  DrawListPainter::Paint(&painter, model_->Draw());
}

void OverviewWidget::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPointF p = event->position();
  std::optional<uint64_t> step = model_->StepAt(p.x(), p.y());
  if (!step.has_value()) return;
  if (event->modifiers() & Qt::ShiftModifier) {
    emit stepShiftClicked(*step);
  } else {
    emit stepClicked(*step);
  }
}

void OverviewWidget::mouseMoveEvent(QMouseEvent* event) {
  const QPointF p = event->position();
  const std::string text = model_->TooltipAt(p.x(), p.y());
  if (text.empty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), QString::fromStdString(text), this);
  }
}

}  // namespace trainscope::viewer

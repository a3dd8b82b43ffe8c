#include "trainscope/viewer/widgets/traffic_matrix_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {

TrafficMatrixWidget::TrafficMatrixWidget(TrafficMatrixLayout* layout, QWidget* parent)
    : QWidget(parent), layout_(layout) {
  setMouseTracking(true);
  setMinimumSize(480, 360);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void TrafficMatrixWidget::paintEvent(QPaintEvent*) {
  layout_->SetViewport(width(), height());
  QPainter painter(this);
  DrawListPainter::Paint(&painter, layout_->Draw());
}

void TrafficMatrixWidget::mouseMoveEvent(QMouseEvent* event) {
  const QPointF p = event->position();
  const std::string text = layout_->TooltipAt(p.x(), p.y());
  if (text.empty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), QString::fromStdString(text), this);
  }
}

}  // namespace trainscope::viewer

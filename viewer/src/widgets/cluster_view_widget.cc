#include "trainscope/viewer/widgets/cluster_view_widget.h"

#include <QComboBox>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {

ClusterViewWidget::ClusterViewWidget(ClusterView* view, QWidget* parent)
    : QWidget(parent), view_(view) {
  setMouseTracking(true);
  setMinimumSize(480, 360);
  setAttribute(Qt::WA_OpaquePaintEvent);
  level_ = new QComboBox(this);
  for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost, ClusterLevel::kRack}) {
    level_->addItem(QString("by %1").arg(ClusterLevelName(level)), static_cast<int>(level));
  }
  level_->setCurrentIndex(static_cast<int>(view_->level()));
  connect(level_, &QComboBox::currentIndexChanged, this, [this](int index) {
    view_->SetLevel(static_cast<ClusterLevel>(level_->itemData(index).toInt()));
    update();
  });
}

void ClusterViewWidget::resizeEvent(QResizeEvent*) {
  level_->adjustSize();
  level_->move(width() - level_->width() - 8, 4);
}

void ClusterViewWidget::paintEvent(QPaintEvent*) {
  if (level_->currentIndex() != static_cast<int>(view_->level())) {
    level_->blockSignals(true);
    level_->setCurrentIndex(static_cast<int>(view_->level()));
    level_->blockSignals(false);
  }
  view_->SetViewport(width(), height());
  QPainter painter(this);
  DrawListPainter::Paint(&painter, view_->Draw());
  if (lassoing_ && lasso_.size() > 1) {
    QPainterPath path;
    path.moveTo(lasso_[0].x, lasso_[0].y);
    for (const PointF& p : lasso_) path.lineTo(p.x, p.y);
    painter.setRenderHint(QPainter::Antialiasing, true);
    painter.setPen(QPen(QColor(25, 118, 210), 1.5, Qt::DashLine));
    painter.setBrush(QColor(25, 118, 210, 30));
    painter.drawPath(path);
  }
}

void ClusterViewWidget::mousePressEvent(QMouseEvent* event) {
  const QPointF p = event->position();
  const bool lasso =
      event->button() == Qt::RightButton ||
      (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  if (lasso) {
    lassoing_ = true;
    lasso_ = {{static_cast<float>(p.x()), static_cast<float>(p.y())}};
    return;
  }
  if (event->button() == Qt::LeftButton) {
    if (view_->ClickAt(static_cast<float>(p.x()), static_cast<float>(p.y()))) {
      emit selectionChanged();
    }
    update();
  }
}

void ClusterViewWidget::mouseMoveEvent(QMouseEvent* event) {
  const QPointF p = event->position();
  if (lassoing_) {
    lasso_.push_back({static_cast<float>(p.x()), static_cast<float>(p.y())});
    update();
    return;
  }
  const std::string text = view_->TooltipAt(static_cast<float>(p.x()), static_cast<float>(p.y()));
  if (text.empty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), QString::fromStdString(text), this);
  }
}

void ClusterViewWidget::mouseReleaseEvent(QMouseEvent*) {
  if (!lassoing_) return;
  lassoing_ = false;
  if (view_->LassoSelect(lasso_)) emit selectionChanged();
  lasso_.clear();
  update();
}

}  // namespace trainscope::viewer

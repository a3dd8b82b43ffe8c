#include "trainscope/viewer/widgets/cluster_view_widget.h"

#include <QComboBox>
#include <QKeyEvent>
#include <QLineEdit>
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
  if (view_->filterable()) {
    filter_ = new QLineEdit(this);
    filter_->setPlaceholderText("filter: host=… rack=… x=LO-HI y=LO-HI");
    filter_->setClearButtonEnabled(true);
    filter_->setFixedWidth(300);
    connect(filter_, &QLineEdit::returnPressed, this, &ClusterViewWidget::ApplyFilter);
  }
  setFocusPolicy(Qt::ClickFocus);
  // The first paint shows what is there; only later layouts animate.
  seen_transitions_ = view_->transitions();
  animation_.setInterval(16);
  connect(&animation_, &QTimer::timeout, this, [this] {
    const double t = static_cast<double>(clock_.elapsed()) / kTransitionMs;
    view_->SetTransition(t);
    if (t >= 1) animation_.stop();
    update();
  });
}

void ClusterViewWidget::ApplyFilter() {
  const absl::Status status = view_->SetFilterText(filter_->text().toStdString());
  filter_->setStyleSheet(status.ok() ? "" : "QLineEdit { border: 2px solid #d32f2f; }");
  filter_->setToolTip(status.ok() ? "" : QString::fromStdString(std::string(status.message())));
  if (!status.ok())
    QToolTip::showText(filter_->mapToGlobal(QPoint(0, filter_->height())), filter_->toolTip(),
                       filter_);
  update();
}

void ClusterViewWidget::resizeEvent(QResizeEvent*) {
  level_->adjustSize();
  level_->move(width() - level_->width() - 8, 4);
  // Under the level box: the title line runs along the top.
  if (filter_ != nullptr) filter_->move(width() - filter_->width() - 8, level_->height() + 8);
}

void ClusterViewWidget::paintEvent(QPaintEvent*) {
  if (level_->currentIndex() != static_cast<int>(view_->level())) {
    level_->blockSignals(true);
    level_->setCurrentIndex(static_cast<int>(view_->level()));
    level_->blockSignals(false);
  }
  view_->SetViewport(width(), height());
  const DrawList* list = &view_->Draw();
  if (view_->transitions() != seen_transitions_) {
    // A new layout: start from the old one (drawn again, not the new one
    // for a frame) and move towards the new.
    seen_transitions_ = view_->transitions();
    view_->SetTransition(0);
    list = &view_->Draw();
    clock_.start();
    animation_.start();
  }
  QPainter painter(this);
  DrawListPainter::Paint(&painter, *list);
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
  if (event->button() == Qt::BackButton) {
    if (view_->BackOut()) update();
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

void ClusterViewWidget::keyPressEvent(QKeyEvent* event) {
  if ((event->key() == Qt::Key_Escape || event->key() == Qt::Key_Backspace) && view_->BackOut()) {
    update();
    return;
  }
  QWidget::keyPressEvent(event);
}

void ClusterViewWidget::mouseReleaseEvent(QMouseEvent*) {
  if (!lassoing_) return;
  lassoing_ = false;
  if (view_->LassoSelect(lasso_)) emit selectionChanged();
  lasso_.clear();
  update();
}

}  // namespace trainscope::viewer

#include "trainscope/viewer/widgets/marey_widget.h"

#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <cmath>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {

MareyWidget::MareyWidget(MareyModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setMinimumSize(480, 240);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void MareyWidget::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  model_->SetViewport(width(), height());
  QPainter painter(this);
  DrawListPainter::Paint(&painter, model_->Draw());
  if (drag_ == Drag::kBrush && moved_) {
    const RectF plot = model_->plot_rect();
    const int x0 = std::min(press_.x(), last_.x());
    const int x1 = std::max(press_.x(), last_.x());
    painter.fillRect(QRectF(x0, plot.y, x1 - x0, plot.h), QColor(30, 90, 200, 50));
    painter.setPen(QPen(QColor(30, 90, 200), 1));
    painter.drawRect(QRectF(x0, plot.y, x1 - x0, plot.h));
  }
  last_frame_ms_ = timer.nsecsElapsed() / 1e6;
}

void MareyWidget::mousePressEvent(QMouseEvent* event) {
  press_ = last_ = event->position().toPoint();
  moved_ = false;
  const bool brush =
      event->button() == Qt::RightButton ||
      (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  drag_ = brush ? Drag::kBrush : event->button() == Qt::LeftButton ? Drag::kPan : Drag::kNone;
}

void MareyWidget::mouseMoveEvent(QMouseEvent* event) {
  const QPoint position = event->position().toPoint();
  if (drag_ != Drag::kNone) {
    if ((position - press_).manhattanLength() > 3) moved_ = true;
    if (drag_ == Drag::kPan && moved_) {
      model_->PanBy(static_cast<float>(position.x() - last_.x()));
      emit viewChanged();
    }
    last_ = position;
    update();
    return;
  }
  std::optional<MareyModel::Hit> hit = model_->HitTest(position.x(), position.y());
  if (hit.has_value() && !hit->text.empty()) {
    QToolTip::showText(event->globalPosition().toPoint(), QString::fromStdString(hit->text), this);
  } else {
    QToolTip::hideText();
  }
}

void MareyWidget::mouseReleaseEvent(QMouseEvent* event) {
  const QPoint position = event->position().toPoint();
  if (drag_ == Drag::kBrush && moved_) {
    model_->BrushTo(static_cast<float>(press_.x()), static_cast<float>(position.x()));
    emit viewChanged();
  } else if (!moved_ && event->button() == Qt::LeftButton) {
    std::optional<MareyModel::Hit> hit = model_->HitTest(position.x(), position.y());
    if (hit.has_value()) {
      if (hit->kind == MareyModel::Hit::Kind::kRowLabel && !hit->group_key.empty()) {
        model_->ToggleExpanded(hit->group_key);
        emit viewChanged();
      } else if (hit->kind == MareyModel::Hit::Kind::kOperator ||
                 hit->kind == MareyModel::Hit::Kind::kMergedBin) {
        emit stepClicked(hit->step);
      }
    }
  }
  drag_ = Drag::kNone;
  moved_ = false;
  update();
}

void MareyWidget::mouseDoubleClickEvent(QMouseEvent*) {
  model_->ResetZoom();
  emit viewChanged();
  update();
}

void MareyWidget::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  model_->ZoomAt(static_cast<float>(event->position().x()), std::pow(1.25, steps));
  emit viewChanged();
  update();
}

MareyPanel::MareyPanel(MareyModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* bar = new QHBoxLayout();
  bar->setContentsMargins(6, 2, 6, 0);
  raw_ = new QCheckBox("raw device clocks", this);
  raw_->setToolTip("Place operators by each device's own clock instead of the aligned one");
  cpu_rows_ = new QCheckBox("CPU rows", this);
  cpu_rows_->setChecked(model_->show_cpu_rows());
  cpu_rows_->setToolTip(
      "Devices with GPU streams: show their CPU operators on a thin row above the streams");
  grouping_ = new QComboBox(this);
  grouping_->addItems({"one row per device", "group by pipeline stage", "group by host"});
  grouping_->setToolTip(
      "Vertical aggregation: min/avg/max rows per group; click a group to expand");
  auto* reset = new QPushButton("Reset zoom", this);
  reset->setToolTip(QString("Show %1 steps: the newest, or around the selected step")
                        .arg(MareyTimeWindow::kDefaultSteps));
  auto* hint = new QLabel(
      "wheel: zoom \xC2\xB7 drag: pan \xC2\xB7 right-drag: zoom to a range \xC2\xB7 "
      "double-click: whole run",
      this);
  hint->setStyleSheet("color: #666;");
  bar->addWidget(raw_);
  bar->addWidget(cpu_rows_);
  bar->addWidget(grouping_);
  bar->addWidget(reset);
  bar->addStretch(1);
  bar->addWidget(hint);
  layout->addLayout(bar);
  view_ = new MareyWidget(model, this);
  layout->addWidget(view_, 1);
  connect(raw_, &QCheckBox::toggled, this, [this](bool raw) {
    model_->SetRawTimestamps(raw);
    view_->update();
  });
  connect(cpu_rows_, &QCheckBox::toggled, this, [this](bool show) {
    model_->SetShowCpuRows(show);
    view_->update();
  });
  connect(grouping_, &QComboBox::currentIndexChanged, this, [this](int index) {
    model_->SetGrouping(index == 1   ? MareyModel::Grouping::kStage
                        : index == 2 ? MareyModel::Grouping::kHost
                                     : MareyModel::Grouping::kNone);
    view_->update();
  });
  connect(reset, &QPushButton::clicked, this, [this] {
    model_->ShowReadableRange();
    model_->ClearFocus();
    view_->update();
    emit view_->viewChanged();
  });
}

void MareyPanel::SyncControls() {
  raw_->blockSignals(true);
  raw_->setChecked(model_->raw_timestamps());
  raw_->blockSignals(false);
  cpu_rows_->blockSignals(true);
  cpu_rows_->setChecked(model_->show_cpu_rows());
  cpu_rows_->blockSignals(false);
  grouping_->blockSignals(true);
  grouping_->setCurrentIndex(model_->grouping() == MareyModel::Grouping::kStage  ? 1
                             : model_->grouping() == MareyModel::Grouping::kHost ? 2
                                                                                 : 0);
  grouping_->blockSignals(false);
}

}  // namespace trainscope::viewer

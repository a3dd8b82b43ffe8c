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
#include "trainscope/viewer/widgets/elided_label.h"

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
  const RectF plot = model_->plot_rect();
  // The range statistics' steps: an amber band with edges, over the bands.
  const QColor range_colour(230, 140, 20);
  if (marked_range_.has_value() && !model_->raw_timestamps()) {
    const float x0 = std::max(plot.x, model_->TimeToX(marked_range_->first));
    const float x1 = std::min(plot.x + plot.w, model_->TimeToX(marked_range_->second));
    if (x1 > x0) {
      painter.fillRect(QRectF(x0, plot.y, x1 - x0, plot.h), QColor(230, 140, 20, 40));
      painter.setPen(QPen(range_colour, 2));
      painter.drawLine(QPointF(x0, plot.y), QPointF(x0, plot.y + plot.h));
      painter.drawLine(QPointF(x1, plot.y), QPointF(x1, plot.y + plot.h));
    }
  }
  if ((drag_ == Drag::kBrush || drag_ == Drag::kRange) && moved_) {
    const QColor colour = drag_ == Drag::kBrush ? QColor(30, 90, 200) : range_colour;
    const int x0 = std::min(press_.x(), last_.x());
    const int x1 = std::max(press_.x(), last_.x());
    QColor fill = colour;
    fill.setAlpha(50);
    painter.fillRect(QRectF(x0, plot.y, x1 - x0, plot.h), fill);
    painter.setPen(QPen(colour, 1));
    painter.drawRect(QRectF(x0, plot.y, x1 - x0, plot.h));
  }
  last_frame_ms_ = timer.nsecsElapsed() / 1e6;
}

void MareyWidget::mousePressEvent(QMouseEvent* event) {
  press_ = last_ = event->position().toPoint();
  moved_ = false;
  const bool left = event->button() == Qt::LeftButton;
  drag_ = event->button() == Qt::RightButton                 ? Drag::kBrush
          : left && (event->modifiers() & Qt::ShiftModifier) ? Drag::kRange
          : left                                             ? Drag::kPan
                                                             : Drag::kNone;
}

void MareyWidget::SetMarkedRange(std::optional<std::pair<int64_t, int64_t>> range) {
  if (range == marked_range_) return;
  marked_range_ = range;
  update();
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
  } else if (drag_ == Drag::kRange && moved_) {
    emit rangeSelected(model_->XToTime(static_cast<float>(press_.x())),
                       model_->XToTime(static_cast<float>(position.x())));
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
  // Elided (full text in its tooltip), so the hint never widens the window.
  ElidedLabel* hint = ElidedLabel::Hint(
      "wheel: zoom \xC2\xB7 drag: pan \xC2\xB7 right-drag: zoom to a range \xC2\xB7 "
      "shift-drag: statistics of a range \xC2\xB7 double-click: whole run",
      this);
  bar->addWidget(raw_);
  bar->addWidget(cpu_rows_);
  bar->addWidget(grouping_);
  bar->addWidget(reset);
  bar->addSpacing(12);
  bar->addWidget(hint, 1);
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

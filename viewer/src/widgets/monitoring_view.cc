#include "trainscope/viewer/widgets/monitoring_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {
namespace {

// Only paints: the slider and its label live in MonitoringView.
class MonitoringCanvas : public QWidget {
 public:
  MonitoringCanvas(LossModel* model, QWidget* parent) : QWidget(parent), model_(model) {
    setMinimumSize(480, 240);
    setAttribute(Qt::WA_OpaquePaintEvent);
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    model_->SetMonitoringViewport(width(), height());
    QPainter painter(this);
    DrawListPainter::Paint(&painter, model_->DrawMonitoring());
  }

 private:
  LossModel* model_;
};

}  // namespace

MonitoringView::MonitoringView(LossModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  canvas_ = new MonitoringCanvas(model_, this);
  layout->addWidget(canvas_, 1);
  auto* row = new QHBoxLayout();
  row->setContentsMargins(10, 4, 10, 6);
  row->addWidget(new QLabel("<b>Iteration</b> (oldest \xE2\x86\x92 newest snapshot):", this));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setTickPosition(QSlider::TicksBelow);
  slider_->setPageStep(1);
  row->addWidget(slider_, 1);
  position_ = new QLabel(this);
  position_->setMinimumWidth(260);
  row->addWidget(position_);
  // The maps' colour scale (issue 23.5: a shared linear scale left tiny
  // iterations blank).
  row->addSpacing(12);
  row->addWidget(new QLabel("Colour scale:", this));
  scaling_ = new QComboBox(this);
  scaling_->setObjectName("map_scaling");
  scaling_->addItem("per iteration", static_cast<int>(MapScaling::kPerIteration));
  scaling_->addItem("shared (all snapshots)", static_cast<int>(MapScaling::kShared));
  scaling_->addItem("log (all snapshots)", static_cast<int>(MapScaling::kLog));
  scaling_->setToolTip(
      "per iteration: each iteration on its own maximum (shows its structure); shared: one "
      "linear scale over every snapshot (comparable); log: four decades below the largest "
      "value of every snapshot (both)");
  row->addWidget(scaling_);
  connect(scaling_, &QComboBox::currentIndexChanged, this, [this](int index) {
    model_->SetMapScaling(static_cast<MapScaling>(scaling_->itemData(index).toInt()));
    Refresh();
  });
  layout->addLayout(row);
  connect(slider_, &QSlider::valueChanged, this, [this](int value) {
    model_->SetIterationIndex(value);
    Refresh();
    emit iterationChanged();
  });
  Refresh();
}

QRect MonitoringView::canvas_geometry() const { return canvas_->geometry(); }

void MonitoringView::Refresh() {
  const std::optional<LossModel::Frame> frame = model_->CurrentFrame();
  const int count = frame.has_value() ? static_cast<int>(frame->count) : 0;
  {
    const QSignalBlocker block(slider_);
    slider_->setRange(0, std::max(0, count - 1));
    slider_->setValue(count > 0 ? static_cast<int>(frame->index) : 0);
    slider_->setEnabled(count > 1);
  }
  {
    const QSignalBlocker block(scaling_);
    scaling_->setCurrentIndex(scaling_->findData(static_cast<int>(model_->map_scaling())));
  }
  if (count == 0) {
    position_->setText(model_->has_data() ? "no snapshots of this item" : "no data");
  } else {
    position_->setText(QString("iteration %1 \xC2\xB7 epoch %2 \xC2\xB7 %3 of %4%5")
                           .arg(frame->iteration)
                           .arg(frame->epoch)
                           .arg(frame->index + 1)
                           .arg(count)
                           .arg(model_->following_newest() ? " (newest)" : ""));
  }
  canvas_->update();
}

}  // namespace trainscope::viewer

#include "trainscope/viewer/widgets/trend_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

namespace trainscope::viewer {

TrendPanel::TrendPanel(TrendLayout* layout, QWidget* parent) : QWidget(parent), layout_(layout) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  view_ = new ClusterViewWidget(layout_, this);
  column->addWidget(view_, 1);
  auto* row = new QHBoxLayout();
  row->addWidget(new QLabel("steps per frame", this));
  steps_ = new QSpinBox(this);
  steps_->setRange(1, 10'000);
  steps_->setValue(static_cast<int>(layout_->frame_steps()));
  row->addWidget(steps_);
  row->addWidget(new QLabel("frame", this));
  slider_ = new QSlider(Qt::Horizontal, this);
  row->addWidget(slider_, 1);
  label_ = new QLabel(this);
  row->addWidget(label_);
  column->addLayout(row);
  connect(steps_, &QSpinBox::valueChanged, this, [this](int steps) {
    layout_->SetFrameSteps(static_cast<uint32_t>(steps));
    layout_->SetFrame(std::nullopt);  // the newest frame of the new size
    Refresh();
  });
  connect(slider_, &QSlider::valueChanged, this, [this](int frame) {
    const bool newest = frame == slider_->maximum();
    layout_->SetFrame(newest ? std::nullopt : std::optional<size_t>(static_cast<size_t>(frame)));
    Refresh();
  });
  Refresh();
}

void TrendPanel::Refresh() {
  const size_t frames = layout_->frame_count();
  slider_->blockSignals(true);
  slider_->setRange(0, static_cast<int>(frames == 0 ? 0 : frames - 1));
  slider_->setValue(static_cast<int>(layout_->frame()));
  slider_->blockSignals(false);
  if (frames > 0) {
    const auto& frame = layout_->series().frames[layout_->frame()];
    label_->setText(QString("%1 / %2: steps %3-%4")
                        .arg(layout_->frame() + 1)
                        .arg(frames)
                        .arg(frame.first_step)
                        .arg(frame.last_step));
  } else {
    label_->setText("no steps");
  }
  view_->update();
}

}  // namespace trainscope::viewer

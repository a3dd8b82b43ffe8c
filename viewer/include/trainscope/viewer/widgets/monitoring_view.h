// Paints the LossModel's Monitoring View for the chosen item — the input,
// label and output at the left, one column per monitored layer with C_h on
// top and R_h below, the shared colour bar — above an iteration slider
// (QSlider) that picks the snapshot shown, with its iteration and epoch.
// The slider's right end follows the newest snapshot as it arrives.
//
// Usage:
//   MonitoringView* monitoring = new MonitoringView(&state.loss, parent);
//   monitoring->Refresh();  // after the model changed
//   connect(monitoring, &MonitoringView::iterationChanged, ...);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_MONITORING_VIEW_H_
#define TRAINSCOPE_VIEWER_WIDGETS_MONITORING_VIEW_H_

#include <QWidget>

#include "trainscope/viewer/loss_model.h"

class QComboBox;
class QLabel;
class QSlider;

namespace trainscope::viewer {

class MonitoringView : public QWidget {
  Q_OBJECT

 public:
  explicit MonitoringView(LossModel* model, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 480}; }
  // Syncs the slider and its label with the model and repaints.
  void Refresh();
  QSlider* slider() const { return slider_; }
  // Where the maps are painted, in this widget's coordinates (the model's
  // geometry is relative to it).
  QRect canvas_geometry() const;

 signals:
  void iterationChanged();

 private:
  LossModel* model_;
  QWidget* canvas_;
  QSlider* slider_;
  QLabel* position_;
  QComboBox* scaling_;  // the maps' colour scale (MapScaling)
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_MONITORING_VIEW_H_

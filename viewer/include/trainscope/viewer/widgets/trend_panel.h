// The trend view with its controls: the small multiples (a
// ClusterViewWidget over TrendLayout), the steps per frame, and the frame
// slider that marks one frame in every cell.
//
// Usage:
//   auto* trends = new TrendPanel(&state.trend, parent);
//   trends->Refresh();  // after new steps: the slider's range follows
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_TREND_PANEL_H_
#define TRAINSCOPE_VIEWER_WIDGETS_TREND_PANEL_H_

#include <QWidget>

#include "trainscope/viewer/trend_layout.h"
#include "trainscope/viewer/widgets/cluster_view_widget.h"

class QSlider;
class QSpinBox;
class QLabel;

namespace trainscope::viewer {

class TrendPanel : public QWidget {
  Q_OBJECT

 public:
  explicit TrendPanel(TrendLayout* layout, QWidget* parent = nullptr);
  void Refresh();
  ClusterViewWidget* view() const { return view_; }
  QSlider* slider() const { return slider_; }
  QSpinBox* frame_steps() const { return steps_; }

 private:
  TrendLayout* layout_;
  ClusterViewWidget* view_;
  QSlider* slider_;
  QSpinBox* steps_;
  QLabel* label_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_TREND_PANEL_H_

// The viewer's window: Controls on top; Jobs and Alerts on the left; the
// training overview above the Marey graph on the right; feed statistics in
// the status bar. A timer takes what the feed thread posted (at most one
// model update per frame, so a fast feed never outruns drawing) and
// refreshes only the views whose models changed.
//
// Usage:
//   ViewerState state;  state.Load(data);          // or fed live:
//   MainWindow window(&state, &coalescer, config);  // coalescer may be null
//   window.show();
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_MAIN_WINDOW_H_
#define TRAINSCOPE_VIEWER_WIDGETS_MAIN_WINDOW_H_

#include <QMainWindow>
#include <cstdint>
#include <string>

#include "trainscope/viewer/feed_coalescer.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/controls_widget.h"

class QLabel;
class QTimer;

namespace trainscope::viewer {

class AlertsWidget;
class JobsWidget;
class MareyPanel;
class OverviewWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  struct Config {
    ControlsWidget::Config controls;
    std::string source;  // shown in the title ("tcp://..." or a data dir)
  };

  MainWindow(ViewerState* state, FeedCoalescer* feed, Config config, QWidget* parent = nullptr);

  // Pulls the models into the widgets (also called by the frame timer).
  void RefreshAll();
  OverviewWidget* overview() const { return overview_; }
  MareyPanel* marey() const { return marey_; }
  AlertsWidget* alerts() const { return alerts_; }
  JobsWidget* jobs() const { return jobs_; }

 private:
  void Tick();

  ViewerState* state_;
  FeedCoalescer* feed_;
  Config config_;
  ControlsWidget* controls_;
  JobsWidget* jobs_;
  AlertsWidget* alerts_;
  OverviewWidget* overview_;
  MareyPanel* marey_;
  QLabel* feed_status_;
  QTimer* timer_;
  uint64_t jobs_version_ = UINT64_MAX;
  uint64_t alerts_version_ = UINT64_MAX;
  uint64_t frames_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_MAIN_WINDOW_H_

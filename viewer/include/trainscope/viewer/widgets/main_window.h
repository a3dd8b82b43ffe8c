// The viewer's window: Controls on top; Search, Jobs and Alerts on the left; on the
// right three tabs: "Training performance" (the training overview above the
// Marey graph above the range statistics), "Loss contribution" (the Selection View above the
// Monitoring View), "Cluster traffic" (the device-pair traffic matrix) and
// the linked cluster views "Topology", "Trends", "Chord" and "Hilbert ring";
// the connection's state (ConnectionModel: live, stale, retrying..., the age
// of the newest update) and feed statistics in the status bar. A timer takes what
// the feed thread posted (at most one model update per frame, so a fast
// feed never outruns drawing) and refreshes only the views whose models
// changed.
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
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "trainscope/viewer/connection_model.h"
#include "trainscope/viewer/feed_coalescer.h"
#include "trainscope/viewer/range_statistics.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/refresh_pacer.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/controls_widget.h"

class QLabel;
class QLineEdit;
class QTabWidget;
class QTimer;

namespace trainscope::viewer {

class AlertsWidget;
class ClusterViewWidget;
class ElidedLabel;
class JobsWidget;
class MareyPanel;
class MonitoringView;
class OverviewWidget;
class RangeStatsPanel;
class SearchWidget;
class SelectionView;
class TrafficMatrixWidget;
class TrendPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  struct Config {
    ControlsWidget::Config controls;
    std::string source;  // shown in the title ("tcp://..." or a data dir)
    // Asks the source for an item's map snapshots (live: the feed client's
    // RequestItem); null when the source loaded them all (a stored job).
    std::function<void(uint64_t item)> request_item;
    bool show_loss_tab = false;  // open on "Loss contribution"
    // What the live source saw of its link (LiveFeedClient::link); null for
    // a stored or synthetic job, which has no connection to show.
    std::function<LinkReport()> link;
    // Shown above the views when not empty: what the source left out (a
    // stored job cut by --max-operators: OperatorCoverage::Notice).
    std::string load_notice;
    // A stored job's loader for a step range (ViewerSource::load_steps):
    // with a load notice, the band offers a steps field and "Load steps",
    // which replace what the window shows; null for other sources.
    std::function<absl::StatusOr<JobData>(StepSpan)> load_steps;
  };

  MainWindow(ViewerState* state, FeedCoalescer* feed, Config config, QWidget* parent = nullptr);

  // Pulls the models into the widgets (also called by the frame timer).
  void RefreshAll();
  OverviewWidget* overview() const { return overview_; }
  MareyPanel* marey() const { return marey_; }
  AlertsWidget* alerts() const { return alerts_; }
  JobsWidget* jobs() const { return jobs_; }
  SelectionView* selection() const { return selection_; }
  MonitoringView* monitoring() const { return monitoring_; }
  // Shows the item in the Monitoring View (and its tab).
  void ChooseItem(uint64_t item);
  SearchWidget* search() const { return search_; }
  // Enter / F3 (+1), Shift+F3 (-1): the search's next or previous match,
  // shown in the Marey graph (its tab) with its step and device selected.
  void JumpToMatch(int direction);
  // Feeds the connection model (the frame timer does, with Config::link and
  // the wall clock) and shows its state; public so tests inject the time.
  void ObserveLink(const LinkReport& report, int64_t now_ns);
  const ConnectionModel& connection() const { return connection_; }
  // A transient line in the status bar (elided to fit; the full text in its
  // tooltip), cleared after timeout_ms.
  void ShowNotice(const QString& text, int timeout_ms);
  ElidedLabel* notice_label() const { return notice_; }
  ElidedLabel* feed_status_label() const { return feed_status_; }
  // The link's state, elided in the middle (its update age stays in view).
  ElidedLabel* connection_label() const { return connection_status_; }
  QLabel* load_notice_label() const { return load_notice_; }
  // The band's steps field (null without Config::load_steps).
  QLineEdit* load_steps_field() const { return load_steps_; }
  // "Load steps": loads the field's FIRST-LAST through Config::load_steps
  // and shows it; a bad range or a failed load is said in the status bar
  // and what was shown stays.
  void LoadSteps();

 protected:
  // Caps the connection state at two thirds of the window, so that at a narrow
  // width it is elided instead of pushing the notice off the status bar.
  void resizeEvent(QResizeEvent* event) override;

 private:
  void Tick();
  // Asks the source for the chosen item's snapshots when nobody has yet.
  void RequestChosenItem();

  ViewerState* state_;
  FeedCoalescer* feed_;
  Config config_;
  ControlsWidget* controls_;
  JobsWidget* jobs_;
  AlertsWidget* alerts_;
  SearchWidget* search_;  // above the jobs
  OverviewWidget* overview_;
  MareyPanel* marey_;
  RangeStatsPanel* range_stats_;  // under the Marey graph
  QTabWidget* tabs_;
  SelectionView* selection_;
  MonitoringView* monitoring_;
  TrafficMatrixWidget* traffic_;     // the "Cluster traffic" tab
  ClusterViewWidget* topology_;      // "Topology"
  TrendPanel* trends_;               // "Trends"
  ClusterViewWidget* chord_;         // "Chord"
  ClusterViewWidget* hilbert_ring_;  // "Hilbert ring"
  ElidedLabel* feed_status_;
  ElidedLabel* notice_;
  QTimer* notice_timer_;
  ElidedLabel* connection_status_;
  QLabel* load_notice_ = nullptr;
  QLineEdit* load_steps_ = nullptr;
  ConnectionModel connection_;
  uint64_t connection_version_ = UINT64_MAX;
  QTimer* timer_;
  uint64_t jobs_version_ = UINT64_MAX;
  uint64_t alerts_version_ = UINT64_MAX;
  uint64_t loss_version_ = UINT64_MAX;
  uint64_t range_stats_version_ = UINT64_MAX;
  std::optional<uint64_t> requested_item_;
  uint64_t frames_ = 0;
  RefreshPacer pacer_;  // bounds the live updates' work (Tick)
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_MAIN_WINDOW_H_

#include "trainscope/viewer/widgets/main_window.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trainscope/viewer/widgets/alerts_widget.h"
#include "trainscope/viewer/widgets/cluster_view_widget.h"
#include "trainscope/viewer/widgets/elided_label.h"
#include "trainscope/viewer/widgets/marey_widget.h"
#include "trainscope/viewer/widgets/monitoring_view.h"
#include "trainscope/viewer/widgets/overview_widget.h"
#include "trainscope/viewer/widgets/range_stats_panel.h"
#include "trainscope/viewer/widgets/search_widget.h"
#include "trainscope/viewer/widgets/selection_view.h"
#include "trainscope/viewer/widgets/table_widgets.h"
#include "trainscope/viewer/widgets/traffic_matrix_widget.h"
#include "trainscope/viewer/widgets/trend_panel.h"

namespace trainscope::viewer {
namespace {

QWidget* Titled(const QString& title, QWidget* body, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(2);
  auto* label = new QLabel("<b>" + title + "</b>", box);
  layout->addWidget(label);
  layout->addWidget(body, 1);
  body->setParent(box);
  return box;
}

}  // namespace

MainWindow::MainWindow(ViewerState* state, FeedCoalescer* feed, Config config, QWidget* parent)
    : QMainWindow(parent), state_(state), feed_(feed), config_(std::move(config)) {
  setWindowTitle(QString("trainscope viewer \xE2\x80\x94 %1 (%2)")
                     .arg(QString::fromStdString(config_.controls.job_id),
                          QString::fromStdString(config_.source)));
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  controls_ = new ControlsWidget(config_.controls, central);
  layout->addWidget(controls_);
  if (!config_.load_notice.empty()) {
    auto* band = new QWidget(central);
    band->setObjectName("load_band");
    band->setAttribute(Qt::WA_StyledBackground);
    band->setStyleSheet(
        "#load_band { background: #fff3c4; border-bottom: 1px solid #d9b54a; } "
        "#load_band QLabel { color: #5d4200; background: #fff3c4; }");
    auto* row = new QHBoxLayout(band);
    row->setContentsMargins(8, 4, 8, 4);
    load_notice_ = new QLabel(QString::fromStdString(config_.load_notice), band);
    load_notice_->setObjectName("load_notice");
    load_notice_->setWordWrap(true);
    load_notice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    row->addWidget(load_notice_, 1);
    // Issue 23.5: "let the user load a range" without restarting the viewer.
    if (config_.load_steps) {
      row->addWidget(new QLabel("Steps:", band));
      load_steps_ = new QLineEdit(band);
      load_steps_->setObjectName("load_steps");
      load_steps_->setPlaceholderText("FIRST-LAST");
      load_steps_->setFixedWidth(110);
      row->addWidget(load_steps_);
      auto* load = new QPushButton("Load steps", band);
      load->setObjectName("load_steps_button");
      row->addWidget(load);
      connect(load, &QPushButton::clicked, this, &MainWindow::LoadSteps);
      connect(load_steps_, &QLineEdit::returnPressed, this, &MainWindow::LoadSteps);
    }
    layout->addWidget(band);
  }

  auto* columns = new QSplitter(Qt::Horizontal, central);
  auto* left = new QSplitter(Qt::Vertical, columns);
  search_ = new SearchWidget(&state_->search);
  jobs_ = new JobsWidget();
  alerts_ = new AlertsWidget();
  left->addWidget(Titled("Search", search_, left));
  left->addWidget(Titled("Jobs", jobs_, left));
  left->addWidget(Titled("Alerts", alerts_, left));
  tabs_ = new QTabWidget(columns);
  auto* right = new QSplitter(Qt::Vertical, tabs_);
  overview_ = new OverviewWidget(&state_->overview);
  marey_ = new MareyPanel(&state_->marey);
  range_stats_ = new RangeStatsPanel(&state_->range_stats);
  right->addWidget(overview_);
  right->addWidget(marey_);
  right->addWidget(range_stats_);
  right->setStretchFactor(0, 2);
  right->setStretchFactor(1, 3);
  right->setStretchFactor(2, 1);
  tabs_->addTab(right, "Training performance");
  auto* loss = new QSplitter(Qt::Vertical, tabs_);
  selection_ = new SelectionView(&state_->loss);
  monitoring_ = new MonitoringView(&state_->loss);
  loss->addWidget(selection_);
  loss->addWidget(monitoring_);
  loss->setSizes({440, 560});
  tabs_->addTab(loss, "Loss contribution");
  traffic_ = new TrafficMatrixWidget(&state_->traffic_matrix, tabs_);
  tabs_->addTab(traffic_, "Cluster traffic");
  // The cluster views, linked: a selection in one shows in all of them.
  topology_ = new ClusterViewWidget(&state_->topology, tabs_);
  tabs_->addTab(topology_, "Topology");
  trends_ = new TrendPanel(&state_->trend, tabs_);
  tabs_->addTab(trends_, "Trends");
  chord_ = new ClusterViewWidget(&state_->chord, tabs_);
  tabs_->addTab(chord_, "Chord");
  hilbert_ring_ = new ClusterViewWidget(&state_->hilbert_ring, tabs_);
  tabs_->addTab(hilbert_ring_, "Hilbert ring");
  for (ClusterViewWidget* view : {topology_, trends_->view(), chord_, hilbert_ring_}) {
    connect(view, &ClusterViewWidget::selectionChanged, this, [this] {
      state_->SyncSelection();
      RefreshAll();
    });
  }
  if (config_.show_loss_tab) tabs_->setCurrentIndex(1);
  columns->addWidget(left);
  columns->addWidget(tabs_);
  columns->setSizes({380, 1220});
  right->setSizes({360, 480, 240});
  layout->addWidget(columns, 1);
  setCentralWidget(central);
  connection_status_ = new ElidedLabel(this);
  connection_status_->setObjectName("connection_status");
  connection_status_->SetElideMode(Qt::ElideMiddle);
  // Its whole text while the bar has room (resizeEvent caps it).
  connection_status_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  connection_status_->setVisible(static_cast<bool>(config_.link));
  statusBar()->addPermanentWidget(connection_status_);
  // Notices and feed statistics share the rest of the bar; each is elided
  // to its share with the full text in its tooltip, so none is cut off.
  notice_ = new ElidedLabel(this);
  notice_->setObjectName("notice");
  statusBar()->addWidget(notice_, 3);
  feed_status_ = new ElidedLabel(this);
  feed_status_->setObjectName("feed_status");
  statusBar()->addWidget(feed_status_, 2);
  notice_timer_ = new QTimer(this);
  notice_timer_->setSingleShot(true);
  connect(notice_timer_, &QTimer::timeout, this, [this] { notice_->SetFullText(QString()); });

  connect(overview_, &OverviewWidget::stepClicked, this, [this](quint64 step) {
    state_->SelectStep(step);
    RefreshAll();
  });
  connect(marey_->view(), &MareyWidget::stepClicked, this, [this](quint64 step) {
    state_->SelectStep(step, /*move_marey=*/false);
    RefreshAll();
  });
  // The range statistics: a shift-drag in the Marey graph or a shift-click
  // in the overview (from the selected step) picks the steps; a top
  // operator's row outlines that operator on the devices that ran it.
  connect(marey_->view(), &MareyWidget::rangeSelected, this, [this](qint64 t0, qint64 t1) {
    if (!state_->range_stats.SelectTimeRange(state_->marey.store().steps(), t0, t1)) {
      ShowNotice("range statistics: no step in the dragged range", 5000);
    }
    RefreshAll();
  });
  connect(overview_, &OverviewWidget::stepShiftClicked, this, [this](quint64 step) {
    state_->range_stats.SelectSteps(state_->selection.selected_step().value_or(step), step);
    RefreshAll();
  });
  connect(range_stats_, &RangeStatsPanel::rangeCleared, this, [this] { RefreshAll(); });
  connect(range_stats_, &RangeStatsPanel::operatorClicked, this, [this](quint32 name_id) {
    const int row = state_->range_stats.top().Find(name_id);
    if (row < 0) return;
    state_->marey.FocusOn(state_->range_stats.top().rows()[static_cast<size_t>(row)].ranks,
                          name_id, std::nullopt, std::nullopt, MareyModel::FocusRows::kPlain);
    marey_->view()->update();
  });
  connect(marey_->view(), &MareyWidget::viewChanged, this, [this] {
    // Panned or brushed away from the newest steps: stop following, so the
    // checkbox says what the graph does.
    if (state_->selection.following() &&
        state_->marey.time_window().mode() == MareyTimeWindow::Mode::kManual &&
        state_->selection.selected_step().has_value()) {
      state_->SelectStep(*state_->selection.selected_step(), /*move_marey=*/false);
      RefreshAll();
    }
  });
  connect(alerts_, &AlertsWidget::alertClicked, this, [this](int row) {
    if (row < 0) return;
    if (const Alert* alert = state_->SelectAlert(static_cast<size_t>(row))) {
      ShowNotice(QString("alert: step %1 \xE2\x80\x94 %2")
                     .arg(alert->step)
                     .arg(QString::fromStdString(alert->text)),
                 8000);
      // A difficult item's alert shows the item itself.
      if (std::optional<uint64_t> item = LossModel::ItemOfAlert(*alert)) ChooseItem(*item);
    }
    RefreshAll();
  });
  connect(selection_, &SelectionView::itemClicked, this,
          [this](quint64 item) { ChooseItem(item); });
  connect(controls_, &ControlsWidget::followToggled, this, [this](bool follow) {
    if (follow) {
      state_->Follow();
    } else if (state_->selection.selected_step().has_value()) {
      state_->SelectStep(*state_->selection.selected_step(), /*move_marey=*/false);
    }
    RefreshAll();
  });
  // Keyboard: <- / -> step through the steps; W/S zoom the Marey graph in
  // and out (while following: fewer or more steps), A/D pan it (Perfetto).
  auto key = [this](QKeySequence sequence, auto action) {
    auto* shortcut = new QShortcut(sequence, this);
    connect(shortcut, &QShortcut::activated, this, action);
  };
  key(QKeySequence(Qt::Key_Left), [this] {
    if (state_->StepBy(-1)) RefreshAll();
  });
  key(QKeySequence(Qt::Key_Right), [this] {
    if (state_->StepBy(1)) RefreshAll();
  });
  auto marey_key = [this](auto change) {
    const RectF plot = state_->marey.plot_rect();
    change(&state_->marey, plot);
    emit marey_->view()->viewChanged();
    marey_->view()->update();
  };
  key(QKeySequence(Qt::Key_W),
      [marey_key] { marey_key([](MareyModel* m, RectF p) { m->ZoomAt(p.x + p.w / 2, 1.25); }); });
  key(QKeySequence(Qt::Key_S),
      [marey_key] { marey_key([](MareyModel* m, RectF p) { m->ZoomAt(p.x + p.w / 2, 0.8); }); });
  key(QKeySequence(Qt::Key_A),
      [marey_key] { marey_key([](MareyModel* m, RectF p) { m->PanBy(p.w / 8); }); });
  key(QKeySequence(Qt::Key_D),
      [marey_key] { marey_key([](MareyModel* m, RectF p) { m->PanBy(-p.w / 8); }); });
  // Search: Ctrl+F or / to type, Enter or F3 for the next match, Shift+F3
  // the previous; Escape gives the keys above back.
  key(QKeySequence::Find, [this] { search_->FocusField(); });
  key(QKeySequence(Qt::Key_Slash), [this] { search_->FocusField(); });
  key(QKeySequence(Qt::Key_F3), [this] { JumpToMatch(1); });
  key(QKeySequence(Qt::SHIFT | Qt::Key_F3), [this] { JumpToMatch(-1); });
  connect(search_, &SearchWidget::jumpRequested, this, &MainWindow::JumpToMatch);
  connect(search_, &SearchWidget::done, this, [this] { marey_->view()->setFocus(); });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { RefreshAll(); });
  timer_ = new QTimer(this);
  connect(timer_, &QTimer::timeout, this, &MainWindow::Tick);
  timer_->start(33);
  resize(1600, 1000);
  RefreshAll();
}

void MainWindow::ShowNotice(const QString& text, int timeout_ms) {
  notice_->SetFullText(text);
  notice_timer_->start(timeout_ms);
}

void MainWindow::JumpToMatch(int direction) {
  search_->ApplyPendingQuery();
  if (state_->search.Jump(direction, &state_->selection, &state_->marey)) {
    tabs_->setCurrentWidget(overview_->parentWidget());  // where the Marey graph is
    RefreshAll();
  }
  search_->Refresh();
}

void MainWindow::ChooseItem(uint64_t item) {
  state_->loss.Choose(item);
  tabs_->setCurrentIndex(1);
  RefreshAll();
}

void MainWindow::RequestChosenItem() {
  const std::optional<uint64_t> chosen = state_->loss.chosen_item();
  if (!config_.request_item || !chosen.has_value() || !state_->loss.NeedsSnapshots()) return;
  if (requested_item_ == chosen) return;  // asked already; the answer is on its way
  requested_item_ = chosen;
  config_.request_item(*chosen);
}

void MainWindow::ObserveLink(const LinkReport& report, int64_t now_ns) {
  connection_.Observe(report, now_ns);
  if (connection_.version() == connection_version_) return;
  connection_version_ = connection_.version();
  connection_status_->setVisible(true);
  connection_status_->SetFullText(QString::fromStdString(connection_.Text()));
  // Live: plain; connecting: amber; anything that means old data: red.
  const ConnectionModel::State state = connection_.state();
  const char* colour = state == ConnectionModel::State::kLive         ? nullptr
                       : state == ConnectionModel::State::kConnecting ? "#b07000"
                                                                      : "#c0392b";
  connection_status_->setStyleSheet(
      colour == nullptr
          ? QString()
          : QString("#connection_status { color: white; background: %1; font-weight: bold; }")
                .arg(colour));
  state_->ShowConnection(connection_);
  controls_->ShowFeedStale(connection_.data_stale());
  RefreshAll();
}

void MainWindow::LoadSteps() {
  if (!config_.load_steps || load_steps_ == nullptr) return;
  absl::StatusOr<StepSpan> span =
      ParseStepSpan("steps", load_steps_->text().trimmed().toStdString());
  absl::StatusOr<JobData> data =
      span.ok() ? config_.load_steps(*span) : absl::StatusOr<JobData>(span.status());
  if (!data.ok()) {
    ShowNotice(QString::fromStdString(std::string(data.status().message())), 15'000);
    return;
  }
  state_->Load(*data);
  const std::string notice = data->coverage.Notice();
  load_notice_->setText(QString::fromStdString(
      notice.empty() ? "Steps " + std::to_string(span->first) + "\xE2\x80\x93" +
                           std::to_string(span->last) + ": every operator of the range is loaded."
                     : notice));
  RefreshAll();
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  connection_status_->setMaximumWidth(std::max(120, width() * 2 / 3));
  QMainWindow::resizeEvent(event);
}

void MainWindow::Tick() {
  const int64_t now_ns = absl::ToUnixNanos(absl::Now());
  if (config_.link) ObserveLink(config_.link(), now_ns);
  if (feed_ == nullptr) return;
  // At most RefreshPacer::kVisibleHz model updates and repaints a second,
  // fewer while hidden, none when nothing arrived: the feed coalesces what
  // comes in between (issue 23.5: the viewer runs beside training).
  const bool visible = isVisible() && !isMinimized();
  if (!pacer_.Due(now_ns, visible, feed_->HasPending())) return;
  std::optional<FeedCoalescer::Delta> delta = feed_->Take();
  if (delta.has_value()) {
    ++frames_;
    for (const std::string& notice : delta->notices) {
      ShowNotice(QString::fromStdString(notice), 10000);
    }
    state_->Apply(std::move(*delta));
    if (visible) RefreshAll();
  }
  const FeedCoalescer::Stats stats = feed_->stats();
  feed_status_->SetFullText(QString("feed: %1 updates in %2 frames \xC2\xB7 skipped %3 states, %4 "
                                    "operator batches \xC2\xB7 Marey frame %5 ms")
                                .arg(stats.posts)
                                .arg(stats.takes)
                                .arg(stats.states_skipped)
                                .arg(stats.batches_dropped)
                                .arg(marey_->view()->last_frame_ms(), 0, 'f', 1));
}

void MainWindow::RefreshAll() {
  state_->SyncSelection();
  if (state_->jobs.version() != jobs_version_) {
    jobs_version_ = state_->jobs.version();
    jobs_->Refresh(state_->jobs);
    if (const JobRecord* job = state_->jobs.Find(state_->job_id())) {
      controls_->ShowRecording(job->recording);
      controls_->ShowJobState(job->state);
      controls_->ShowLossContribution(job->loss_contribution);
    }
  }
  if (state_->alerts.version() != alerts_version_) {
    alerts_version_ = state_->alerts.version();
    alerts_->Refresh(state_->alerts);
  }
  if (state_->loss.version() != loss_version_) {
    loss_version_ = state_->loss.version();
    const size_t items = state_->loss.state().has_value() ? state_->loss.state()->items.size() : 0;
    tabs_->setTabText(1, items == 0 ? QString("Loss contribution")
                                    : QString("Loss contribution (%1 items)").arg(items));
    selection_->Refresh();
    monitoring_->Refresh();
    RequestChosenItem();
  }
  controls_->ShowSelection(state_->selection);
  marey_->SyncControls();
  // Only the shown tab repaints; switching tabs refreshes the new one.
  QWidget* shown = tabs_->currentWidget();
  if (shown == overview_->parentWidget()) {
    overview_->update();
    marey_->view()->update();
    // A live job's new data is counted at most every few seconds (the whole
    // job's operators are many); a new range at once.
    state_->range_stats.Update(state_->marey.store(), state_->names,
                               absl::ToUnixNanos(absl::Now()));
    if (state_->range_stats.version() != range_stats_version_) {
      range_stats_version_ = state_->range_stats.version();
      range_stats_->Refresh();
      marey_->view()->SetMarkedRange(state_->range_stats.marked_time_range());
    }
  }
  if (shown == traffic_) traffic_->update();
  if (shown == topology_) topology_->update();
  if (shown == trends_) trends_->Refresh();
  if (shown == chord_) chord_->update();
  if (shown == hilbert_ring_) hilbert_ring_->update();
}

}  // namespace trainscope::viewer

// The Controls panel: recording on/off, the loss-contribution hooks on/off
// and halt for the shown job, sent to the collector's Commands service by a
// JobCommandSender, with the job's token found like the CLI finds it
// (client::TokenResolver: --token, --token-file, TRAINSCOPE_TOKEN,
// DATA_DIR/jobs/JOB/token) or asked for; a halt asks for confirmation first.
// Also the follow-newest / pinned switch for the shared selected step.
//
// Usage:
//   ControlsWidget* controls = new ControlsWidget({.collector = "127.0.0.1:7070",
//                                                  .job_id = "job-1"}, parent);
//   connect(controls, &ControlsWidget::followToggled, ...);
//   controls->ShowSelection(state.selection);
//
// Threading: the UI thread; commands run on the sender's worker thread and
// their outcome comes back through the event loop (a queued call).
#ifndef TRAINSCOPE_VIEWER_WIDGETS_CONTROLS_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_CONTROLS_WIDGET_H_

#include <QWidget>
#include <filesystem>
#include <optional>
#include <string>

#include "trainscope/client/token_resolver.h"
#include "trainscope/viewer/job_command_sender.h"
#include "trainscope/viewer/job_controls_model.h"
#include "trainscope/viewer/selection_state.h"

class QCheckBox;
class QInputDialog;
class QLabel;
class QPushButton;

namespace trainscope::viewer {

class ControlsWidget : public QWidget {
  Q_OBJECT

 public:
  struct Config {
    std::string collector;  // empty: offline, commands disabled
    std::string job_id;
    client::TokenResolver::Sources token_sources;
    bool ask_before_halt = true;
    client::ClientSecurity security;  // TLS and read token for the Commands service
  };

  explicit ControlsWidget(Config config, QWidget* parent = nullptr);
  ~ControlsWidget() override;

  void ShowSelection(const SelectionState& selection);
  // The feed is gone (ConnectionModel::data_stale): the next ShowSelection
  // calls the followed step the last seen, not the newest.
  void ShowFeedStale(bool stale);
  void ShowRecording(bool recording);
  // The job's state (the collector's): halt is off on a finished or halted
  // job, every command on a finished one, with the reason in the tooltip.
  void ShowJobState(JobStateKind state);
  // The token prompt for `command` (`why`: the resolver's complaint about a
  // source given, or empty): word-wrapped at a readable width. Owned by the
  // caller; public so that tests measure it.
  QInputDialog* MakeTokenDialog(const std::string& command, const std::string& why);
  // The collector's last switch of the hooks; nullopt: never switched.
  void ShowLossContribution(std::optional<bool> enabled);

 signals:
  void followToggled(bool follow);

 private:
  // Runs `command` ("enable", "disable", "enable-loss-contribution",
  // "disable-loss-contribution", "halt"; the collector's command names) with
  // the resolved token.
  void RunCommand(const std::string& command);
  std::optional<std::string> Token(const std::string& command);
  // Enables the buttons as model_ says.
  void ApplyAvailability();
  void Report(const QString& text, bool error);

  Config config_;
  JobControlsModel model_;
  QPushButton* record_on_;
  QPushButton* record_off_;
  QPushButton* loss_on_;
  QPushButton* loss_off_;
  QPushButton* halt_;
  QCheckBox* follow_;
  QLabel* selection_;
  QLabel* status_;
  JobCommandSender sender_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_CONTROLS_WIDGET_H_

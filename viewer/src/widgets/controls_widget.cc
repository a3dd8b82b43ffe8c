#include "trainscope/viewer/widgets/controls_widget.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <memory>
#include <utility>

namespace trainscope::viewer {

ControlsWidget::ControlsWidget(Config config, QWidget* parent)
    : QWidget(parent),
      config_(std::move(config)),
      model_(!config_.collector.empty(), config_.job_id),
      sender_(config_.collector, config_.job_id, config_.security) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  follow_ = new QCheckBox("Follow newest step", this);
  follow_->setChecked(true);
  follow_->setToolTip("Off: stay on the selected step while new steps arrive");
  selection_ = new QLabel("no step yet", this);
  record_on_ = new QPushButton("Recording on", this);
  record_off_ = new QPushButton("Recording off", this);
  loss_on_ = new QPushButton("Loss contribution on", this);
  loss_off_ = new QPushButton("Loss contribution off", this);
  halt_ = new QPushButton("Halt job\xE2\x80\xA6", this);
  halt_->setStyleSheet(
      "QPushButton { color: white; background: #c62828; padding: 3px 10px; }"
      "QPushButton:disabled { color: #eee; background: #d9a3a3; }");
  status_ = new QLabel(this);
  layout->addWidget(follow_);
  layout->addWidget(selection_);
  layout->addSpacing(24);
  layout->addWidget(record_on_);
  layout->addWidget(record_off_);
  layout->addSpacing(12);
  layout->addWidget(loss_on_);
  layout->addWidget(loss_off_);
  layout->addSpacing(12);
  layout->addWidget(halt_);
  layout->addSpacing(12);
  layout->addWidget(status_, 1);
  // Names for tests and for style sheets.
  record_on_->setObjectName("record_on");
  record_off_->setObjectName("record_off");
  loss_on_->setObjectName("loss_contribution_on");
  loss_off_->setObjectName("loss_contribution_off");
  halt_->setObjectName("halt");
  status_->setObjectName("status");
  ApplyAvailability();
  connect(follow_, &QCheckBox::toggled, this, &ControlsWidget::followToggled);
  connect(record_on_, &QPushButton::clicked, this, [this] { RunCommand("enable"); });
  connect(record_off_, &QPushButton::clicked, this, [this] { RunCommand("disable"); });
  connect(loss_on_, &QPushButton::clicked, this,
          [this] { RunCommand("enable-loss-contribution"); });
  connect(loss_off_, &QPushButton::clicked, this,
          [this] { RunCommand("disable-loss-contribution"); });
  connect(halt_, &QPushButton::clicked, this, [this] {
    if (config_.ask_before_halt &&
        QMessageBox::warning(
            this, "Halt job",
            QString("Halt job %1?\n\nEvery rank stops at its next step boundary (the job's "
                    "on_halt callback runs first). This cannot be undone from here.")
                .arg(QString::fromStdString(config_.job_id)),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) != QMessageBox::Yes) {
      return;
    }
    RunCommand("halt");
  });
}

ControlsWidget::~ControlsWidget() = default;

void ControlsWidget::ApplyAvailability() {
  for (const auto& [button, command] : std::initializer_list<std::pair<QPushButton*, const char*>>{
           {record_on_, "enable"},
           {record_off_, "disable"},
           {loss_on_, "enable-loss-contribution"},
           {loss_off_, "disable-loss-contribution"}}) {
    const JobControlsModel::Button state = model_.Switch(command);
    button->setEnabled(state.enabled);
    button->setToolTip(QString::fromStdString(state.tooltip));
  }
  const JobControlsModel::Button halt = model_.Halt();
  halt_->setEnabled(halt.enabled);
  halt_->setToolTip(QString::fromStdString(halt.tooltip));
}

void ControlsWidget::ShowJobState(JobStateKind state) {
  if (state == model_.job_state()) return;
  model_.SetJobState(state);
  ApplyAvailability();
}

void ControlsWidget::ShowSelection(const SelectionState& selection) {
  follow_->blockSignals(true);
  follow_->setChecked(selection.following());
  follow_->blockSignals(false);
  selection_->setText(QString::fromStdString(
      model_.SelectionText(selection.selected_step(), selection.following())));
}

void ControlsWidget::ShowFeedStale(bool stale) { model_.SetFeedStale(stale); }

void ControlsWidget::ShowRecording(bool recording) {
  record_on_->setDown(false);
  record_on_->setText(recording ? "Recording on \xE2\x9C\x93" : "Recording on");
  record_off_->setText(recording ? "Recording off" : "Recording off \xE2\x9C\x93");
}

void ControlsWidget::ShowLossContribution(std::optional<bool> enabled) {
  const char* check = " \xE2\x9C\x93";
  loss_on_->setText(QString("Loss contribution on") + (enabled == true ? check : ""));
  loss_off_->setText(QString("Loss contribution off") + (enabled == false ? check : ""));
}

QInputDialog* ControlsWidget::MakeTokenDialog(const std::string& command, const std::string& why) {
  auto* dialog = new QInputDialog(this);
  dialog->setWindowTitle("Job token");
  dialog->setInputMode(QInputDialog::TextInput);
  dialog->setTextEchoMode(QLineEdit::Password);
  dialog->setLabelText(
      QString::fromStdString(JobControlsModel::TokenPrompt(config_.job_id, command, why)));
  // QInputDialog sizes itself to its label's longest line: wrap it at a
  // readable width instead (issue 23.5: a 1,660-px-wide dialog).
  for (QLabel* label : dialog->findChildren<QLabel*>()) {
    label->setWordWrap(true);
    label->setMinimumWidth(440);
    label->setMaximumWidth(520);
  }
  dialog->adjustSize();
  return dialog;
}

std::optional<std::string> ControlsWidget::Token(const std::string& command) {
  absl::StatusOr<client::ResolvedToken> token =
      client::TokenResolver::Resolve(config_.job_id, config_.token_sources);
  if (token.ok()) return token->token;
  // FAILED_PRECONDITION: no source was given (its message lists the CLI's
  // sources, --data-dir among them, which the prompt says better).
  const std::string why = token.status().code() == absl::StatusCode::kFailedPrecondition
                              ? std::string()
                              : std::string(token.status().message());
  std::unique_ptr<QInputDialog> dialog(MakeTokenDialog(command, why));
  if (dialog->exec() != QDialog::Accepted) return std::nullopt;
  const QString typed = dialog->textValue().trimmed();
  if (typed.isEmpty()) return std::nullopt;
  return typed.toStdString();
}

void ControlsWidget::Report(const QString& text, bool error) {
  status_->setStyleSheet(error ? "color: #c62828;" : "color: #2e7d32;");
  status_->setText(text);
}

void ControlsWidget::RunCommand(const std::string& command) {
  std::optional<std::string> token = Token(command);
  if (!token.has_value()) {
    Report("no token: " + QString::fromStdString(command) + " not sent", true);
    return;
  }
  Report("sending " + QString::fromStdString(command) + "\xE2\x80\xA6", false);
  QPointer<ControlsWidget> self(this);
  sender_.Send(command, *token, [self](JobCommandSender::Outcome outcome) {
    // On the sender's worker: the label belongs to the UI thread.
    QMetaObject::invokeMethod(
        QCoreApplication::instance(),
        [self, outcome] {
          if (self) self->Report(QString::fromStdString(outcome.text), !outcome.ok);
        },
        Qt::QueuedConnection);
  });
}

}  // namespace trainscope::viewer

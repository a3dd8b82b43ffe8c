#include "trainscope/viewer/widgets/controls_widget.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>

namespace trainscope::viewer {

ControlsWidget::ControlsWidget(Config config, QWidget* parent)
    : QWidget(parent), config_(std::move(config)), sender_(config_.collector, config_.job_id, config_.security) {
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
  const bool online = !config_.collector.empty();
  // Names for tests and for style sheets.
  record_on_->setObjectName("record_on");
  record_off_->setObjectName("record_off");
  loss_on_->setObjectName("loss_contribution_on");
  loss_off_->setObjectName("loss_contribution_off");
  halt_->setObjectName("halt");
  status_->setObjectName("status");
  for (QPushButton* button : {record_on_, record_off_, loss_on_, loss_off_, halt_}) {
    button->setEnabled(online);
    if (!online) button->setToolTip("Offline (a stored log): commands need --collector");
  }
  if (online) {
    record_on_->setToolTip("Start recording on every rank of " +
                           QString::fromStdString(config_.job_id));
    record_off_->setToolTip("Stop recording (agents stay attached, near-zero cost)");
    loss_on_->setToolTip(
        "Install the trainscope.LossContribution hooks on every rank (at its next batch)");
    loss_off_->setToolTip(
        "Remove the loss-contribution hooks on every rank: training runs as without them");
    halt_->setToolTip("Stop every rank at its next step boundary (needs the job's token)");
  }
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

void ControlsWidget::ShowSelection(const SelectionState& selection) {
  follow_->blockSignals(true);
  follow_->setChecked(selection.following());
  follow_->blockSignals(false);
  if (!selection.selected_step().has_value()) {
    selection_->setText("no step yet");
  } else {
    selection_->setText(QString("step %1 (%2)")
                            .arg(*selection.selected_step())
                            .arg(selection.following() ? "newest" : "pinned"));
  }
}

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

std::optional<std::string> ControlsWidget::Token() {
  absl::StatusOr<client::ResolvedToken> token =
      client::TokenResolver::Resolve(config_.job_id, config_.token_sources);
  if (token.ok()) return token->token;
  bool ok = false;
  const QString typed =
      QInputDialog::getText(this, "Job token",
                            QString("The token of job %1 (%2):")
                                .arg(QString::fromStdString(config_.job_id),
                                     QString::fromStdString(std::string(token.status().message()))),
                            QLineEdit::Password, QString(), &ok);
  if (!ok || typed.trimmed().isEmpty()) return std::nullopt;
  return typed.trimmed().toStdString();
}

void ControlsWidget::Report(const QString& text, bool error) {
  status_->setStyleSheet(error ? "color: #c62828;" : "color: #2e7d32;");
  status_->setText(text);
}

void ControlsWidget::RunCommand(const std::string& command) {
  std::optional<std::string> token = Token();
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

// ControlsWidget against a scripted Commands service: each button sends the
// request its label promises (recording and the loss-contribution hooks are
// separate switches) and the status line says what the collector answered.
#include "trainscope/viewer/widgets/controls_widget.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QInputDialog>
#include <QLabel>
#include <QPushButton>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "trainscope/base/mutex.h"
#include "trainscope/v1/commands.grpc.pb.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

// Knows job "digits" with token "secret" and 4 ranks; keeps the last request.
class ScriptedCommands final : public trainscope::v1::Commands::Service {
 public:
  grpc::Status SetRecording(grpc::ServerContext*,
                            const trainscope::v1::SetRecordingRequest* request,
                            trainscope::v1::CommandReply* reply) override {
    base::MutexLock lock(&mu_);
    last_ = *request;
    if (request->token() != "secret") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "wrong token for job digits");
    }
    reply->set_ranks_reached(4);
    return grpc::Status::OK;
  }

  // Job "digits" finished: a halt reaches no rank (as the collector answers).
  grpc::Status Halt(grpc::ServerContext*, const trainscope::v1::HaltJobRequest*,
                    trainscope::v1::CommandReply* reply) override {
    reply->set_ranks_reached(0);
    reply->set_message("halt sent to 0 connected ranks of job digits (world size 4)");
    return grpc::Status::OK;
  }

  std::optional<trainscope::v1::SetRecordingRequest> last() {
    base::MutexLock lock(&mu_);
    return last_;
  }

 private:
  base::Mutex mu_;
  std::optional<trainscope::v1::SetRecordingRequest> last_ ABSL_GUARDED_BY(mu_);
};

class ControlsWidgetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  std::unique_ptr<ControlsWidget> MakeWidget(std::string collector, std::string token) {
    ControlsWidget::Config config;
    config.collector = std::move(collector);
    config.job_id = "digits";
    config.token_sources.flag = std::move(token);
    return std::make_unique<ControlsWidget>(config);
  }

  // Clicks the named button and returns the status line once the command's
  // answer is on it (or what it says after 10 s).
  static QString ClickAndWait(ControlsWidget* widget, const char* button) {
    auto* target = widget->findChild<QPushButton*>(button);
    EXPECT_NE(target, nullptr) << button;
    if (target == nullptr) return {};
    auto* status = widget->findChild<QLabel*>("status");
    target->click();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline &&
           (status->text().isEmpty() || status->text().startsWith("sending"))) {
      QApplication::processEvents(QEventLoop::AllEvents, 20);
    }
    return status->text();
  }

  ScriptedCommands service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(ControlsWidgetTest, LossContributionButtonsSwitchTheHooksNotRecording) {
  auto widget = MakeWidget(address_, "secret");
  const QString off = ClickAndWait(widget.get(), "loss_contribution_off");
  std::optional<trainscope::v1::SetRecordingRequest> sent = service_.last();
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->job_id(), "digits");
  EXPECT_EQ(sent->token(), "secret");
  EXPECT_TRUE(sent->loss_contribution());
  EXPECT_FALSE(sent->enabled());
  EXPECT_TRUE(off.startsWith("disable-loss-contribution: 4 ranks reached")) << off.toStdString();

  ClickAndWait(widget.get(), "loss_contribution_on");
  sent = service_.last();
  ASSERT_TRUE(sent.has_value());
  EXPECT_TRUE(sent->loss_contribution());
  EXPECT_TRUE(sent->enabled());
}

TEST_F(ControlsWidgetTest, RecordingButtonsLeaveTheHooksAlone) {
  auto widget = MakeWidget(address_, "secret");
  for (const auto& [button, enabled] : {std::pair{"record_off", false}, {"record_on", true}}) {
    ClickAndWait(widget.get(), button);
    const std::optional<trainscope::v1::SetRecordingRequest> sent = service_.last();
    ASSERT_TRUE(sent.has_value()) << button;
    EXPECT_FALSE(sent->loss_contribution()) << button;
    EXPECT_EQ(sent->enabled(), enabled) << button;
  }
}

TEST_F(ControlsWidgetTest, ARefusalIsShownWithTheCollectorsReason) {
  auto widget = MakeWidget(address_, "guess");
  const QString text = ClickAndWait(widget.get(), "loss_contribution_on");
  EXPECT_TRUE(text.startsWith("enable-loss-contribution failed")) << text.toStdString();
  EXPECT_TRUE(text.contains("wrong token for job digits")) << text.toStdString();
}

TEST_F(ControlsWidgetTest, TheCollectorsSwitchIsTickedAndOfflineDisablesCommands) {
  auto widget = MakeWidget(address_, "secret");
  auto* on = widget->findChild<QPushButton*>("loss_contribution_on");
  auto* off = widget->findChild<QPushButton*>("loss_contribution_off");
  ASSERT_NE(on, nullptr);
  ASSERT_NE(off, nullptr);
  const QString tick = QString::fromUtf8("\xE2\x9C\x93");
  widget->ShowLossContribution(std::nullopt);  // never switched: neither is ticked
  EXPECT_FALSE(on->text().contains(tick));
  EXPECT_FALSE(off->text().contains(tick));
  widget->ShowLossContribution(false);
  EXPECT_FALSE(on->text().contains(tick));
  EXPECT_TRUE(off->text().contains(tick));
  widget->ShowLossContribution(true);
  EXPECT_TRUE(on->text().contains(tick));
  EXPECT_FALSE(off->text().contains(tick));
  EXPECT_TRUE(on->isEnabled());

  auto offline = MakeWidget("", "secret");
  for (const char* name :
       {"record_on", "record_off", "loss_contribution_on", "loss_contribution_off", "halt"}) {
    auto* button = offline->findChild<QPushButton*>(name);
    ASSERT_NE(button, nullptr) << name;
    EXPECT_FALSE(button->isEnabled()) << name;
  }
  EXPECT_FALSE(service_.last().has_value());
}

TEST_F(ControlsWidgetTest, HaltIsOffOnAFinishedOrHaltedJobWithTheReason) {
  auto widget = MakeWidget(address_, "secret");
  auto* halt = widget->findChild<QPushButton*>("halt");
  ASSERT_NE(halt, nullptr);
  widget->ShowJobState(JobStateKind::kRunning);
  EXPECT_TRUE(halt->isEnabled());
  widget->ShowJobState(JobStateKind::kFinished);
  EXPECT_FALSE(halt->isEnabled());
  EXPECT_TRUE(halt->toolTip().contains("finished")) << halt->toolTip().toStdString();
  EXPECT_FALSE(widget->findChild<QPushButton*>("record_on")->isEnabled());
  widget->ShowJobState(JobStateKind::kHalted);
  EXPECT_FALSE(halt->isEnabled());
  EXPECT_TRUE(halt->toolTip().contains("halted already")) << halt->toolTip().toStdString();
}

TEST_F(ControlsWidgetTest, AHaltThatReachedNoRankIsShownAsAFailure) {
  ControlsWidget::Config config;
  config.collector = address_;
  config.job_id = "digits";
  config.token_sources.flag = "secret";
  config.ask_before_halt = false;
  ControlsWidget widget(config);
  const QString text = ClickAndWait(&widget, "halt");
  EXPECT_TRUE(text.startsWith("halt reached no rank")) << text.toStdString();
  EXPECT_TRUE(widget.findChild<QLabel*>("status")->styleSheet().contains("#c62828"));
}

// Issue 23.5: the prompt was 1,660 px wide and suggested --data-dir.
TEST_F(ControlsWidgetTest, TheTokenDialogIsReadableAndSaysWhereTheTokenIs) {
  auto widget = MakeWidget(address_, "secret");
  std::unique_ptr<QInputDialog> dialog(widget->MakeTokenDialog("halt", ""));
  dialog->setAttribute(Qt::WA_DontShowOnScreen);
  dialog->show();
  QApplication::processEvents();
  EXPECT_LE(dialog->width(), 720);
  EXPECT_GE(dialog->width(), 300);
  QString labels;
  for (QLabel* label : dialog->findChildren<QLabel*>()) labels += label->text();
  EXPECT_FALSE(labels.contains("--data-dir")) << labels.toStdString();
  EXPECT_TRUE(labels.contains("jobs/digits/token")) << labels.toStdString();
  // Rendered: the text wraps inside the dialog (dark pixels on several rows).
  const QImage image = dialog->grab().toImage();
  int text_rows = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      if (qGray(image.pixel(x, y)) < 80) {
        ++text_rows;
        break;
      }
    }
  }
  EXPECT_GE(text_rows, 40) << "the prompt's lines are not drawn";
  if (const char* out = std::getenv("VIEWER_TEST_SAVE")) {
    image.save(QString(out) + "/token-dialog.png");
  }
  dialog->hide();
}

}  // namespace
}  // namespace trainscope::viewer

// The status bar and the Jobs table of a live window whose collector is
// gone, rendered offscreen: the connection state in red with the update's
// age, and the job greyed as "last seen running" without a step rate.
#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QLabel>
#include <QStatusBar>
#include <QTreeWidget>
#include <cstdlib>
#include <string>

#include "test_application.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/elided_label.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/table_widgets.h"

namespace trainscope::viewer {
namespace {

constexpr int64_t kS = 1'000'000'000;

bool Reddish(const QColor& c) { return c.red() > 150 && c.green() < 90 && c.blue() < 90; }

class ConnectionStatusRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }
};

TEST_F(ConnectionStatusRenderTest, DisconnectedCollectorIsShownInRedAndTheJobGreyed) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 4;
  options.steps = 6;
  JobData data = GenerateSyntheticJob(options);
  data.job.state = JobStateKind::kRunning;
  state.Load(data);
  // The newest update is the newest step: the outage starts after it, so the
  // overview keeps every step's lines.
  const int64_t t0 = data.steps.back().end_ns;
  MainWindow::Config config;
  config.source = "tcp://127.0.0.1:7071";
  config.controls.job_id = state.job_id();
  MainWindow window(&state, nullptr, config);
  window.setAttribute(Qt::WA_DontShowOnScreen);
  window.resize(1400, 800);
  window.show();

  LinkReport live;
  live.phase = LinkReport::Phase::kFollowing;
  live.last_contact_ns = t0;
  live.last_update_ns = t0;
  window.ObserveLink(live, t0 + kS);
  EXPECT_EQ(window.connection().state(), ConnectionModel::State::kLive);
  EXPECT_EQ(window.connection_label()->full_text().toStdString(),
            "live \xC2\xB7 last update 1 s ago");
  QTreeWidgetItem* row = window.jobs()->topLevelItem(0);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->text(1).toStdString(), "running");
  EXPECT_NE(row->text(3).toStdString(), "-");  // a step rate while live

  // The collector was killed 40 s ago and does not answer: the feed thread retries.
  LinkReport gone = live;
  gone.phase = LinkReport::Phase::kRetrying;
  gone.attempts = 2;
  gone.error = "the collector at tcp://127.0.0.1:7072 stopped answering: no reply within 2s";
  window.ObserveLink(gone, t0 + 40 * kS);
  EXPECT_EQ(window.connection().state(), ConnectionModel::State::kRetrying);
  const std::string text = window.connection_label()->full_text().toStdString();
  EXPECT_NE(text.find("retrying (attempt 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("last update 40 s ago"), std::string::npos) << text;
  row = window.jobs()->topLevelItem(0);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->text(1).toStdString(), "last seen running 40 s ago");
  EXPECT_EQ(row->text(3).toStdString(), "-");  // no step rate for a feed that is gone
  EXPECT_EQ(row->foreground(1).color(), QColor(Qt::gray));

  QCoreApplication::processEvents();  // lays the status bar out for the new text
  const QImage image = window.grab().toImage();
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    image.save(QString::fromStdString(std::string(dir) + "/connection-disconnected.png"));
  }
  // The state's label is painted red in the status bar.
  ElidedLabel* label = window.connection_label();
  ASSERT_TRUE(label->isVisible());
  EXPECT_EQ(label->ShownText().toStdString(), label->full_text().toStdString())
      << "the state is cut off";
  const QPoint origin = label->mapTo(&window, QPoint(0, 0));
  int red = 0;
  for (int y = origin.y(); y < origin.y() + label->height(); ++y) {
    for (int x = origin.x(); x < origin.x() + label->width(); ++x) {
      red += Reddish(image.pixelColor(x * image.width() / window.width(),
                                      y * image.height() / window.height()));
    }
  }
  EXPECT_GT(red, label->width() * label->height() / 3) << "the disconnected state is not red";

  // Back live: plain again, the job no longer greyed.
  LinkReport back = live;
  back.last_contact_ns = t0 + 60 * kS;
  back.last_update_ns = t0 + 60 * kS;
  window.ObserveLink(back, t0 + 60 * kS);
  EXPECT_EQ(window.connection().state(), ConnectionModel::State::kLive);
  EXPECT_EQ(window.jobs()->topLevelItem(0)->text(1).toStdString(), "running");
  ASSERT_EQ(window.connection().outages().size(), 1u);
  EXPECT_EQ(window.connection().outages()[0].start_ns, t0);
  EXPECT_EQ(window.connection().outages()[0].end_ns, t0 + 60 * kS);
}

}  // namespace
}  // namespace trainscope::viewer

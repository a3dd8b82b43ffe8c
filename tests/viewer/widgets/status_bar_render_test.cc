// The status bar at a narrow window: a long notice and the feed statistics
// are elided to their share of the bar with the full text in the tooltip,
// never cut off by each other or the window's edge (issue 23.5); at a wide
// window the same texts are shown whole.
#include <gtest/gtest.h>

#include <QApplication>
#include <QFontMetrics>
#include <QImage>
#include <QStatusBar>
#include <cstdlib>
#include <memory>
#include <string>

#include "test_application.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/elided_label.h"
#include "trainscope/viewer/widgets/main_window.h"

namespace trainscope::viewer {
namespace {

const QString kNotice = QString::fromUtf8(
    "alert: step 102 \xE2\x80\x94 rank 3's step took 2.4x the median of the other ranks "
    "(412.5 ms vs 171.9 ms) for 5 steps: a straggler; its own compute grew, the others waited");
const QString kFeed = QString::fromUtf8(
    "feed: 12345 updates in 6789 frames \xC2\xB7 skipped 120 states, 3 operator batches "
    "\xC2\xB7 Marey frame 3.2 ms");

class StatusBarRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  // A 900 px window (source: what its title names) on a 6-step synthetic
  // job, showing kNotice.
  MainWindow& OpenNarrowWindow(const std::string& source) {
    SyntheticJobOptions options;
    options.devices = 4;
    options.steps = 6;
    state_.Load(GenerateSyntheticJob(options));
    MainWindow::Config config;
    config.source = source;
    config.controls.job_id = state_.job_id();
    window_ = std::make_unique<MainWindow>(&state_, nullptr, config);
    window_->setAttribute(Qt::WA_DontShowOnScreen);
    window_->resize(900, 700);
    window_->show();
    window_->ShowNotice(kNotice, 60'000);
    return *window_;
  }

  ViewerState state_;
  std::unique_ptr<MainWindow> window_;
};

// The label fits the bar, draws what it shows inside its own rectangle, and
// keeps the full text in its tooltip.
void ExpectFits(const MainWindow& window, const ElidedLabel* label, const QString& full) {
  EXPECT_EQ(label->toolTip(), full);
  const QString shown = label->ShownText();
  EXPECT_LE(label->fontMetrics().horizontalAdvance(shown), label->contentsRect().width())
      << shown.toStdString();
  const QRect in_bar = QRect(label->mapTo(&window, QPoint(0, 0)), label->size());
  EXPECT_LE(in_bar.right(), window.width()) << shown.toStdString();
  EXPECT_GT(label->width(), 80) << "squeezed out of the bar";
}

TEST_F(StatusBarRenderTest, LongTextsAreElidedToFitWithTheFullTextInTheTooltip) {
  MainWindow& window = OpenNarrowWindow("");
  window.feed_status_label()->SetFullText(kFeed);
  QApplication::processEvents();

  ElidedLabel* notice = window.notice_label();
  ElidedLabel* feed = window.feed_status_label();
  ExpectFits(window, notice, kNotice);
  ExpectFits(window, feed, kFeed);
  EXPECT_NE(notice->ShownText(), kNotice);  // 900 px cannot hold both
  EXPECT_TRUE(notice->ShownText().endsWith(QChar(0x2026))) << notice->ShownText().toStdString();
  EXPECT_TRUE(notice->ShownText().startsWith("alert: step 102"))
      << notice->ShownText().toStdString();

  // Pixels: the notice's text is drawn in its rectangle of the bar.
  const QImage bar = window.statusBar()->grab().toImage();
  const QRect rect(notice->mapTo(window.statusBar(), QPoint(0, 0)), notice->size());
  int dark = 0;
  for (int y = rect.top(); y <= rect.bottom() && y < bar.height(); ++y) {
    for (int x = rect.left(); x <= rect.right() && x < bar.width(); ++x) {
      if (qGray(bar.pixel(x, y)) < 110) ++dark;
    }
  }
  EXPECT_GT(dark, 50) << "no text drawn in the notice";
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    window.grab().toImage().save(QString(dir) + "/status-bar-900.png");
  }

  window.resize(2600, 700);
  QApplication::processEvents();
  EXPECT_EQ(notice->ShownText(), kNotice);
  EXPECT_EQ(feed->ShownText(), kFeed);
  window.hide();
}

// A live window at a narrow width while its collector is gone: the
// connection state (the permanent widget) keeps the state and the update's
// age in view, elided with the full text in its tooltip, and neither pushes
// the notice off the bar nor widens the window past its size.
TEST_F(StatusBarRenderTest, ALongRetryingStateIsElidedAtANarrowWindow) {
  MainWindow& window = OpenNarrowWindow("tcp://127.0.0.1:7071");
  constexpr int64_t kS = 1'000'000'000;
  LinkReport gone;
  gone.phase = LinkReport::Phase::kRetrying;
  gone.last_contact_ns = gone.last_update_ns = 1'700'000'000 * kS;
  gone.attempts = 11;
  gone.error =
      "the collector at tcp://collector-17.training.example.internal:7072 stopped answering: "
      "no reply within 2s";
  window.ObserveLink(gone, gone.last_update_ns + 40 * kS);
  QApplication::processEvents();

  // The state does not set the window's minimum width (the controls row does).
  EXPECT_LT(window.statusBar()->minimumSizeHint().width(), 400);
  ElidedLabel* connection = window.connection_label();
  const std::string full = window.connection().Text();
  EXPECT_EQ(connection->toolTip().toStdString(), full);
  const QString shown = connection->ShownText();
  EXPECT_TRUE(shown.startsWith("retrying (attempt 12)")) << shown.toStdString();
  EXPECT_LE(connection->fontMetrics().horizontalAdvance(shown), connection->contentsRect().width())
      << shown.toStdString();
  const QRect in_bar = QRect(connection->mapTo(&window, QPoint(0, 0)), connection->size());
  EXPECT_LE(in_bar.right(), window.width()) << shown.toStdString();
  EXPECT_GT(window.notice_label()->width(), 80) << "the notice was squeezed out of the bar";
  // The age matters more than the reason: it stays in view.
  EXPECT_TRUE(shown.contains("last update 40 s ago")) << shown.toStdString();
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    window.grab().toImage().save(QString(dir) + "/status-bar-narrow.png");
  }
  window.hide();
}

}  // namespace
}  // namespace trainscope::viewer

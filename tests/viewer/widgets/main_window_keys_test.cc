// The window's keys, pressed as a user would (QTest key events through
// Qt's shortcut handling, offscreen): Ctrl+F and / focus the search, Enter,
// F3 and Shift+F3 walk the matches (the Marey graph zooms to each, outlined,
// with its step and device selected), Escape hands the keys back; <- / ->
// step through the steps, W/S zoom and A/D pan the Marey graph (Perfetto),
// and none of them fire while the search field takes the text. The window
// with a search active is rendered and its pixels checked (issue 23.5).
#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QTest>
#include <cstdlib>
#include <memory>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/marey_widget.h"
#include "trainscope/viewer/widgets/search_widget.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

class MainWindowKeysTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  void SetUp() override {
    SyntheticJobOptions options;
    options.devices = 4;
    options.steps = 12;
    state_.Load(GenerateSyntheticJob(options));
    MainWindow::Config config;
    config.controls.job_id = state_.job_id();
    config.source = "synthetic";
    window_ = std::make_unique<MainWindow>(&state_, nullptr, config);
    window_->resize(1600, 1000);
    window_->show();
    // Window shortcuts fire only in the active window.
    QApplication::setActiveWindow(window_.get());
    ASSERT_TRUE(QTest::qWaitForWindowActive(window_.get()));
    marey()->setFocus();
    QApplication::processEvents();
  }

  void TearDown() override { window_.reset(); }

  MareyWidget* marey() const { return window_->marey()->view(); }
  QLineEdit* field() const { return window_->search()->field(); }
  int64_t ViewWidth() const { return state_.marey.view_end() - state_.marey.view_start(); }

  ViewerState state_;
  std::unique_ptr<MainWindow> window_;
};

TEST_F(MainWindowKeysTest, CtrlFThenEnterJumpsToTheFirstMatchAndF3WalksOn) {
  QTest::keyClick(marey(), Qt::Key_F, Qt::ControlModifier);
  ASSERT_TRUE(field()->hasFocus());
  QTest::keyClicks(field(), "CONV2D");
  QTest::keyClick(field(), Qt::Key_Return);  // runs the query at once, no typing pause

  QListWidget* list = window_->search()->results();
  ASSERT_GE(list->count(), 1);
  EXPECT_TRUE(list->item(0)->text().startsWith(QString::fromUtf8("aten::conv2d \xE2\x80\x94 ")))
      << list->item(0)->text().toStdString();
  EXPECT_TRUE(list->item(0)->text().endsWith("matches on 4 ranks"))
      << list->item(0)->text().toStdString();
  ASSERT_EQ(state_.search.current(), 0u);
  const SearchModel::Match first = state_.search.matches()[0];
  EXPECT_EQ(state_.selection.selected_step(), first.step);
  EXPECT_EQ(state_.selection.selected_ranks(), std::set<uint32_t>({first.rank}));
  EXPECT_LE(state_.marey.view_start(), first.start_ns);
  EXPECT_GE(state_.marey.view_end(), first.end_ns);
  EXPECT_LE(ViewWidth(), 4 * (first.end_ns - first.start_ns) + 4000);
  EXPECT_TRUE(window_->search()->summary()->text().startsWith("match 1 of "))
      << window_->search()->summary()->text().toStdString();

  QTest::keyClick(window_.get(), Qt::Key_F3);
  EXPECT_EQ(state_.search.current(), 1u);
  const SearchModel::Match second = state_.search.matches()[1];
  EXPECT_LE(state_.marey.view_start(), second.start_ns);
  EXPECT_GE(state_.marey.view_end(), second.end_ns);
  QTest::keyClick(window_.get(), Qt::Key_F3, Qt::ShiftModifier);
  EXPECT_EQ(state_.search.current(), 0u);
  // Shift+Enter in the field: back past the first, to the last.
  QTest::keyClick(field(), Qt::Key_Return, Qt::ShiftModifier);
  EXPECT_EQ(state_.search.current(), state_.search.matches().size() - 1);

  // Escape gives the keys back to the graph.
  QTest::keyClick(field(), Qt::Key_Escape);
  EXPECT_TRUE(marey()->hasFocus());
}

TEST_F(MainWindowKeysTest, SlashFocusesTheSearchAndTypesIntoItOnceThere) {
  QTest::keyClick(marey(), Qt::Key_Slash);
  ASSERT_TRUE(field()->hasFocus());
  EXPECT_TRUE(field()->text().isEmpty());
  QTest::keyClicks(field(), "a/b");
  EXPECT_EQ(field()->text(), "a/b");
}

TEST_F(MainWindowKeysTest, AStepOrARankFromTheFieldIsSelected) {
  QTest::keyClick(marey(), Qt::Key_F, Qt::ControlModifier);
  QTest::keyClicks(field(), "#5");
  QTest::keyClick(field(), Qt::Key_Return);
  EXPECT_EQ(state_.selection.selected_step(), 5u);
  EXPECT_FALSE(state_.selection.following());

  field()->clear();
  QTest::keyClicks(field(), "r2");
  QTest::keyClick(field(), Qt::Key_Enter);
  EXPECT_EQ(state_.selection.selected_ranks(), std::set<uint32_t>({2}));
  // "rank 2 (node-1) — 520 operators"
  const QString summary = window_->search()->summary()->text();
  EXPECT_TRUE(summary.startsWith("rank 2 (node-1) ") && summary.endsWith(" operators"))
      << summary.toStdString();
}

TEST_F(MainWindowKeysTest, ArrowsStepAndWasdZoomAndPanTheMareyGraph) {
  state_.SelectStep(6);
  window_->RefreshAll();
  QTest::keyClick(marey(), Qt::Key_Right);
  EXPECT_EQ(state_.selection.selected_step(), 7u);
  QTest::keyClick(marey(), Qt::Key_Left);
  QTest::keyClick(marey(), Qt::Key_Left);
  EXPECT_EQ(state_.selection.selected_step(), 5u);

  state_.marey.SetTimeRange(state_.marey.view_start(), state_.marey.view_end());  // by hand
  const int64_t width = ViewWidth();
  QTest::keyClick(marey(), Qt::Key_W);
  EXPECT_LT(ViewWidth(), width * 9 / 10);  // zoomed in
  QTest::keyClick(marey(), Qt::Key_S);
  QTest::keyClick(marey(), Qt::Key_S);
  EXPECT_GT(ViewWidth(), width * 11 / 10);  // and out
  const int64_t start = state_.marey.view_start();
  QTest::keyClick(marey(), Qt::Key_D);
  EXPECT_GT(state_.marey.view_start(), start);  // later
  QTest::keyClick(marey(), Qt::Key_A);
  QTest::keyClick(marey(), Qt::Key_A);
  EXPECT_LT(state_.marey.view_start(), start);  // earlier
}

TEST_F(MainWindowKeysTest, TheGraphsKeysDoNotFireWhileTypingInTheSearch) {
  state_.SelectStep(6);
  state_.marey.SetTimeRange(state_.marey.view_start(), state_.marey.view_end());
  window_->RefreshAll();
  const int64_t start = state_.marey.view_start();
  const int64_t width = ViewWidth();
  QTest::keyClick(marey(), Qt::Key_F, Qt::ControlModifier);
  QTest::keyClicks(field(), "wasd");
  QTest::keyClick(field(), Qt::Key_Left);
  QTest::keyClick(field(), Qt::Key_Right);
  EXPECT_EQ(field()->text(), "wasd");
  EXPECT_EQ(state_.selection.selected_step(), 6u);
  EXPECT_EQ(state_.marey.view_start(), start);
  EXPECT_EQ(ViewWidth(), width);
}

// The window with a search active: the result list with its counts, the
// summary and, in the Marey graph, the match outlined in red on its row.
TEST_F(MainWindowKeysTest, RendersTheResultsAndTheOutlinedMatch) {
  QTest::keyClick(marey(), Qt::Key_Slash);
  QTest::keyClicks(field(), "conv");
  QTest::keyClick(field(), Qt::Key_Return);
  for (int i = 0; i < 5; ++i) QTest::keyClick(window_.get(), Qt::Key_F3);
  QApplication::processEvents();
  ASSERT_EQ(state_.search.current(), 5u);
  const SearchModel::Match match = state_.search.matches()[5];
  ASSERT_GE(window_->search()->results()->count(), 2);  // conv2d, convolution_backward
  // Long result lines are elided, never widening the left column.
  EXPECT_LE(window_->search()->minimumSizeHint().width(), 250);

  const QImage image = marey()->grab().toImage();
  const float left = state_.marey.TimeToX(match.start_ns);
  const float right = state_.marey.TimeToX(match.end_ns);
  ASSERT_LT(left, right);
  float row_y = -1;
  for (const MareyModel::Row& row : state_.marey.Rows()) {
    if (row.rank == match.rank) {
      row_y = row.axis_y;  // a CPU-only job: one row per device
      break;
    }
  }
  ASSERT_GE(row_y, 0);
  // The outline's red above and below the band, across the operator.
  int red = 0;
  for (int y = static_cast<int>(row_y) - 25; y <= static_cast<int>(row_y) + 25; ++y) {
    for (int x = static_cast<int>(left) - 4; x <= static_cast<int>(right) + 4; ++x) {
      if (x < 0 || y < 0 || x >= image.width() || y >= image.height()) continue;
      const QColor c = image.pixelColor(x, y);
      red += c.red() > 190 && c.green() < 80 && c.blue() < 80;
    }
  }
  EXPECT_GT(red, static_cast<int>(right - left)) << "no red outline around the match";
  // The result list drew its text.
  const QImage list = window_->search()->results()->grab().toImage();
  int dark = 0;
  for (int y = 0; y < std::min(list.height(), 40); ++y) {
    for (int x = 0; x < list.width(); ++x) dark += qGray(list.pixel(x, y)) < 110;
  }
  EXPECT_GT(dark, 50) << "no result text drawn";
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    window_->grab().toImage().save(QString(dir) + "/search-marey.png");
  }
}

}  // namespace
}  // namespace trainscope::viewer

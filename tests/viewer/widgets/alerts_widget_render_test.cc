// The Alerts panel in the main window at its default size, offscreen
// (QT_QPA_PLATFORM=offscreen): the selected alert's whole message is on
// screen, wrapped, in a selectable pane; raised and cleared rows differ in
// pixels; item alerts are grouped apart and shut; the filters filter.
// VIEWER_TEST_SAVE=DIR writes the window as DIR/alerts-window.png.
#include <gtest/gtest.h>

#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QHeaderView>
#include <QImage>
#include <QScrollBar>
#include <QTextDocument>
#include <cstdlib>

#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/alerts_widget.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

const char kLongText[] =
    "rank 2 is a straggler from step 30: its step takes 88.1 ms against 55.0 ms for the other "
    "ranks (z = 9.3), and ranks 0, 1 and 3 wait for it in every all-reduce; look at its "
    "data loader and host load first, then at its GPU clocks";

Alert MakeAlert(uint64_t id, uint64_t step, const std::string& rule, std::vector<uint32_t> ranks,
                int64_t cause, const std::string& text) {
  Alert alert;
  alert.job = "job";
  alert.alert_id = id;
  alert.step = step;
  alert.onset_step = step - 1;
  alert.rule = rule;
  alert.ranks = std::move(ranks);
  alert.cause = cause;
  alert.metric = "step_time_ns";
  alert.value = 88.1e6;
  alert.baseline = 55e6;
  alert.text = text;
  alert.changed_unix_ns = static_cast<int64_t>(step) * 100'000'000;
  return alert;
}

// Fills `state` like a slow-rank job with loss contribution on: a straggler
// (open), a job-wide step-time regression (cleared), 199 item alerts.
void Fill(ViewerState* state) {
  uint64_t id = 1;
  for (uint64_t i = 0; i < 199; ++i) {
    Alert item = MakeAlert(id++, 5 + i / 4, "difficult_item", {i % 4u}, i % 4,
                           "item " + std::to_string(860 + i) + " stayed in the top for 3 epochs");
    item.metric = "loss_contribution";
    item.item = 860 + i;
    state->alerts.Add(item);
  }
  Alert regression = MakeAlert(id++, 33, "step_time_regression", {0, 1, 2, 3}, -1,
                               "the job's step time rose 60 % over its baseline");
  state->alerts.Add(regression);
  state->alerts.Add(MakeAlert(id++, 31, "straggler", {2, 0, 1, 3}, 2, kLongText));
  regression.state = AlertState::kCleared;
  regression.step = 52;
  regression.changed_unix_ns = 5'200'000'000;
  state->alerts.Add(regression);
  state->alerts.SetNewestStep(60);
}

int CountPink(const QImage& image, const QRect& rect) {
  int n = 0;
  for (int y = rect.top(); y <= rect.bottom(); ++y) {
    for (int x = rect.left(); x <= rect.right(); ++x) {
      if (!image.rect().contains(x, y)) continue;
      const QColor c = image.pixelColor(x, y);
      n += c.red() > 240 && c.green() > 205 && c.green() < 240 && c.blue() > 205 && c.blue() < 240;
    }
  }
  return n;
}

class AlertsWidgetRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }
};

TEST_F(AlertsWidgetRenderTest, MainWindowShowsTheWholeMessageAndTellsRaisedFromCleared) {
  ViewerState state;
  Fill(&state);
  ASSERT_NE(state.SelectAlert(0), nullptr);  // the straggler, newest raise
  MainWindow window(&state, nullptr, {});
  window.setAttribute(Qt::WA_DontShowOnScreen);
  window.show();  // at its default size
  window.RefreshAll();
  QApplication::processEvents();
  const QImage image = window.grab().toImage();
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    image.save(QString(dir) + "/alerts-window.png");
  }
  auto* alerts = window.findChild<AlertsWidget*>();
  ASSERT_NE(alerts, nullptr);

  // The message, in full, in a pane that lies inside the window.
  QPlainTextEdit* details = alerts->details();
  EXPECT_TRUE(details->isVisible());
  EXPECT_TRUE(details->isReadOnly());
  EXPECT_TRUE(details->textInteractionFlags() & Qt::TextSelectableByMouse);
  EXPECT_NE(details->toPlainText().toStdString().find(kLongText), std::string::npos);
  const QRect pane(details->mapTo(&window, QPoint(0, 0)), details->size());
  EXPECT_TRUE(window.rect().contains(pane))
      << pane.x() << "," << pane.y() << " " << pane.width() << "x" << pane.height();
  EXPECT_GE(pane.height(), 4 * details->fontMetrics().height());
  // Wrapped, not cut: no horizontal scrolling, and all of it fits the height.
  EXPECT_FALSE(details->horizontalScrollBar()->isVisible());
  EXPECT_GT(details->document()->lineCount(), 0);
  EXPECT_EQ(details->verticalScrollBar()->maximum(), 0)
      << "the selected alert's details do not fit the pane at the default size";

  // Groups: performance open, the 199 items shut below it.
  QTreeWidget* list = alerts->list();
  ASSERT_EQ(list->topLevelItemCount(), 2);
  QTreeWidgetItem* performance = list->topLevelItem(0);
  QTreeWidgetItem* items = list->topLevelItem(1);
  EXPECT_TRUE(performance->isExpanded());
  EXPECT_FALSE(items->isExpanded());
  EXPECT_EQ(items->childCount(), 199);
  ASSERT_EQ(performance->childCount(), 2);
  QTreeWidgetItem* raised = performance->child(0);   // the straggler
  QTreeWidgetItem* cleared = performance->child(1);  // the regression
  EXPECT_TRUE(raised->text(0).contains("raised"));
  EXPECT_TRUE(cleared->text(0).contains("cleared"));
  EXPECT_EQ(list->headerItem()->text(2).toStdString(), "Ranks");
  EXPECT_EQ(cleared->text(2).toStdString(), "0, 1, 2, 3 (no single cause)");
  EXPECT_EQ(list->headerItem()->text(4).toStdString(), "Value");
  EXPECT_EQ(raised->text(4).toStdString(), "step time 88.1 ms (baseline 55.0 ms, +60 %)");
  // At the default size the list is a narrow dock: state, rule and ranks lie
  // inside it and the duration starts inside it (it used to come after Step
  // and Value, off screen; the details pane has every field in full).
  EXPECT_EQ(list->headerItem()->text(3).toStdString(), "Duration");
  const int viewport_width = list->viewport()->width();
  const int duration_x = list->header()->sectionViewportPosition(3);
  EXPECT_LE(list->header()->sectionViewportPosition(2) + list->columnWidth(2), duration_x);
  EXPECT_LE(duration_x + 4 * list->fontMetrics().averageCharWidth(), viewport_width)
      << "the Duration column starts at " << duration_x << " px of a " << viewport_width
      << " px list";
  // Long rule names and rank lists are elided, not allowed to take the row.
  EXPECT_LT(list->columnWidth(2),
            list->fontMetrics().horizontalAdvance("0, 1, 2, 3 (no single cause)"));

  // Raised and cleared look different: the raised state cell is pink (seen
  // unselected: the selection's highlight covers it).
  list->setCurrentItem(nullptr);
  list->clearSelection();
  QApplication::processEvents();
  const QImage unselected = window.grab().toImage();
  auto in_window = [&](QTreeWidgetItem* item) {
    QRect r = list->visualItemRect(item);
    r.setWidth(list->columnWidth(0));
    return QRect(list->viewport()->mapTo(&window, r.topLeft()), r.size());
  };
  const QRect raised_cell = in_window(raised);
  const QRect cleared_cell = in_window(cleared);
  ASSERT_TRUE(window.rect().contains(raised_cell));
  ASSERT_TRUE(window.rect().contains(cleared_cell));
  EXPECT_GT(CountPink(unselected, raised_cell), raised_cell.width() * raised_cell.height() / 3);
  EXPECT_LT(CountPink(unselected, cleared_cell), cleared_cell.width() * cleared_cell.height() / 20);

  // Filters: one rule, then one rank.
  alerts->rule_filter()->setCurrentIndex(alerts->rule_filter()->findText("straggler"));
  ASSERT_EQ(list->topLevelItemCount(), 1);
  EXPECT_EQ(list->topLevelItem(0)->childCount(), 1);
  alerts->rule_filter()->setCurrentIndex(0);
  alerts->rank_filter()->setCurrentIndex(alerts->rank_filter()->findText("rank 3"));
  ASSERT_EQ(list->topLevelItemCount(), 2);
  EXPECT_EQ(list->topLevelItem(0)->childCount(), 2);   // both name rank 3
  EXPECT_EQ(list->topLevelItem(1)->childCount(), 49);  // items 3, 7, ... on rank 3
  alerts->kind_filter()->setCurrentIndex(1);           // performance only
  EXPECT_EQ(list->topLevelItemCount(), 1);
  window.hide();
}

TEST_F(AlertsWidgetRenderTest, ClickReportsTheModelRowOfTheAlert) {
  ViewerState state;
  Fill(&state);
  AlertsWidget widget;
  widget.Refresh(state.alerts);
  int clicked = -1;
  QObject::connect(&widget, &AlertsWidget::alertClicked, [&](int row) { clicked = row; });
  QTreeWidgetItem* regression = widget.list()->topLevelItem(0)->child(1);
  emit widget.list()->itemClicked(regression, 0);
  ASSERT_GE(clicked, 0);
  EXPECT_EQ(state.alerts.AtRow(static_cast<size_t>(clicked))->rule, "step_time_regression");
  emit widget.list()->itemClicked(widget.list()->topLevelItem(0), 0);  // a group: no alert
  EXPECT_EQ(state.alerts.AtRow(static_cast<size_t>(clicked))->rule, "step_time_regression");
}

// Elision is for a list too narrow for its columns: a wide one shows every
// rule name and rank list whole.
TEST_F(AlertsWidgetRenderTest, AWideListElidesNothing) {
  ViewerState state;
  Fill(&state);
  AlertsWidget widget;
  widget.setAttribute(Qt::WA_DontShowOnScreen);
  widget.resize(1600, 600);
  widget.show();
  widget.Refresh(state.alerts);
  QApplication::processEvents();
  const QTreeWidget* list = widget.list();
  const QFontMetrics metrics = list->fontMetrics();
  EXPECT_GE(list->columnWidth(1), metrics.horizontalAdvance("step_time_regression"));
  EXPECT_GE(list->columnWidth(2), metrics.horizontalAdvance("0, 1, 2, 3 (no single cause)"));
  // Narrowed to a dock, it elides again (the resize refits the columns).
  widget.resize(330, 600);
  QApplication::processEvents();
  EXPECT_LT(list->columnWidth(2), metrics.horizontalAdvance("0, 1, 2, 3 (no single cause)"));
  EXPECT_LE(list->header()->sectionViewportPosition(3) + 4 * metrics.averageCharWidth(),
            list->viewport()->width());
  widget.hide();
}

}  // namespace
}  // namespace trainscope::viewer

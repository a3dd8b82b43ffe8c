// The range statistics panel: RangeStatsModel's title, its per-device table
// (each device and the total) and the top operators table, sortable by a
// click on a column's header (the model sorts), a click on an operator
// highlighting it in the Marey graph (operatorClicked), and "Whole job" to
// drop the selected range. Only lays the model's text out.
//
// Usage:
//   auto* panel = new RangeStatsPanel(&state.range_stats, parent);
//   connect(panel, &RangeStatsPanel::operatorClicked, ...);
//   if (state.range_stats.Update(...)) panel->Refresh();
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_RANGE_STATS_PANEL_H_
#define TRAINSCOPE_VIEWER_WIDGETS_RANGE_STATS_PANEL_H_

#include <QWidget>

#include "trainscope/viewer/range_stats_model.h"

class QPushButton;
class QTableWidget;

namespace trainscope::viewer {

class ElidedLabel;

class RangeStatsPanel : public QWidget {
  Q_OBJECT

 public:
  // The top operators table lists at most this many (the rest are counted).
  static constexpr int kMaxOperatorRows = 200;

  explicit RangeStatsPanel(RangeStatsModel* model, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 260}; }
  void Refresh();
  QTableWidget* devices() const { return devices_; }
  QTableWidget* operators() const { return operators_; }

 signals:
  // A top operator's row was clicked: its NameTable id and the devices that ran it.
  void operatorClicked(quint32 name_id);
  // "Whole job": the range was dropped.
  void rangeCleared();

 private:
  void FillOperators();

  RangeStatsModel* model_;
  ElidedLabel* title_;
  QPushButton* whole_job_;
  QTableWidget* devices_;
  QTableWidget* operators_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_RANGE_STATS_PANEL_H_

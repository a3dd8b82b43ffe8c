// The Alerts panel: filters (rule, rank, kind) over a list grouped into
// performance and item alerts, and a details pane below that shows the
// selected alert's message in full, wrapped, selectable and copyable. The
// model decides every text and the filtering; this widget only shows it.
// Raised alerts are drawn red with a filled marker, cleared ones grey with a
// tick, so the two differ at a glance.
//
// Usage:
//   AlertsWidget* alerts = new AlertsWidget(parent);
//   alerts->Refresh(state.alerts);
//   connect(alerts, &AlertsWidget::alertClicked, ...);  // AlertsModel row index
//
// Threading: the UI thread. Refresh keeps a pointer to the model to
// re-filter when a filter changes; the model must outlive the next Refresh.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_ALERTS_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_ALERTS_WIDGET_H_

#include <QComboBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTreeWidget>
#include <QWidget>

#include "trainscope/viewer/alerts_model.h"

namespace trainscope::viewer {

class AlertsWidget : public QWidget {
  Q_OBJECT

 public:
  explicit AlertsWidget(QWidget* parent = nullptr);
  void Refresh(const AlertsModel& model);
  QSize sizeHint() const override { return {520, 320}; }

  const AlertsModel::Filter& filter() const { return filter_; }
  // For tests and --render: the parts as shown.
  QTreeWidget* list() const { return list_; }
  QPlainTextEdit* details() const { return details_; }
  QComboBox* rule_filter() const { return rule_; }
  QComboBox* rank_filter() const { return rank_; }
  QComboBox* kind_filter() const { return kind_; }

 signals:
  // `row`: the AlertsModel row (newest first over every alert).
  void alertClicked(int row);

 protected:
  // Refits the columns when the list's viewport changes width.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Rebuild();
  // Columns as wide as their contents; when they do not all fit the list,
  // long rules, rank lists and durations are elided so that each starts on
  // screen.
  void FitColumns();
  void ShowDetails(QTreeWidgetItem* item);
  void ReadFilters();

  QComboBox* rule_;
  QComboBox* rank_;
  QComboBox* kind_;
  QTreeWidget* list_;
  QPlainTextEdit* details_;
  const AlertsModel* model_ = nullptr;
  AlertsModel::Filter filter_;
  bool rebuilding_ = false;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_ALERTS_WIDGET_H_

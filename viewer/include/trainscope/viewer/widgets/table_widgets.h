// The Jobs and Alerts panels: tree views filled from JobsModel and
// AlertsModel rows (the models decide the text; these only show it). A
// click on an alert reports its row (newest first) for ViewerState.
//
// Usage:
//   JobsWidget* jobs = new JobsWidget(parent);   jobs->Refresh(state.jobs);
//   AlertsWidget* alerts = new AlertsWidget(parent);  alerts->Refresh(state.alerts);
//   connect(alerts, &AlertsWidget::alertClicked, ...);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_TABLE_WIDGETS_H_
#define TRAINSCOPE_VIEWER_WIDGETS_TABLE_WIDGETS_H_

#include <QTreeWidget>

#include "trainscope/viewer/alerts_model.h"
#include "trainscope/viewer/jobs_model.h"

namespace trainscope::viewer {

class JobsWidget : public QTreeWidget {
  Q_OBJECT

 public:
  explicit JobsWidget(QWidget* parent = nullptr);
  void Refresh(const JobsModel& model);
  QSize sizeHint() const override { return {520, 180}; }
};

class AlertsWidget : public QTreeWidget {
  Q_OBJECT

 public:
  explicit AlertsWidget(QWidget* parent = nullptr);
  void Refresh(const AlertsModel& model);
  QSize sizeHint() const override { return {520, 220}; }

 signals:
  void alertClicked(int row);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_TABLE_WIDGETS_H_

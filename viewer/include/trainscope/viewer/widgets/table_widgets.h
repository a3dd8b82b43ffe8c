// The Jobs panel: a tree view filled from JobsModel rows (the model decides
// the text; this only shows it). The Alerts panel is AlertsWidget
// (alerts_widget.h).
//
// Usage:
//   JobsWidget* jobs = new JobsWidget(parent);   jobs->Refresh(state.jobs);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_TABLE_WIDGETS_H_
#define TRAINSCOPE_VIEWER_WIDGETS_TABLE_WIDGETS_H_

#include <QTreeWidget>

#include "trainscope/viewer/jobs_model.h"

namespace trainscope::viewer {

class JobsWidget : public QTreeWidget {
  Q_OBJECT

 public:
  explicit JobsWidget(QWidget* parent = nullptr);
  void Refresh(const JobsModel& model);
  QSize sizeHint() const override { return {520, 180}; }
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_TABLE_WIDGETS_H_

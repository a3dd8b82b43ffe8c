#include "trainscope/viewer/widgets/table_widgets.h"

#include <QHeaderView>
#include <cstdio>

namespace trainscope::viewer {
namespace {

QString Q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

JobsWidget::JobsWidget(QWidget* parent) : QTreeWidget(parent) {
  setHeaderLabels({"Job", "State", "Ranks", "Steps/s", "Newest step", "Recording", "Events/s"});
  setRootIsDecorated(true);
  setAlternatingRowColors(true);
  setUniformRowHeights(true);
  header()->setStretchLastSection(true);
}

void JobsWidget::Refresh(const JobsModel& model) {
  const std::vector<JobsModel::Row> rows = model.Rows();
  std::vector<bool> expanded;
  for (int i = 0; i < topLevelItemCount(); ++i) expanded.push_back(topLevelItem(i)->isExpanded());
  clear();
  for (size_t i = 0; i < rows.size(); ++i) {
    const JobsModel::Row& row = rows[i];
    char rate[32] = "-";
    if (row.steps_per_second.has_value())
      std::snprintf(rate, sizeof(rate), "%.2f", *row.steps_per_second);
    char events[32];
    std::snprintf(events, sizeof(events), "%.0f", row.events_per_second);
    auto* item = new QTreeWidgetItem(
        this, {Q(row.job_id), Q(row.state), Q(row.ranks), rate,
               row.newest_step.has_value() ? QString::number(*row.newest_step) : "-",
               row.recording ? "on" : "off", events});
    for (const JobsModel::RankRow& rank : row.rank_rows) {
      new QTreeWidgetItem(
          item, {QString("rank %1").arg(rank.rank), rank.connected ? "connected" : "gone",
                 Q(rank.host) + (rank.pid ? QString(" pid %1").arg(rank.pid) : ""), "", "", "",
                 QString::number(rank.events) + " events"});
    }
    if (row.stale) {
      // What the feed last said, not what holds now.
      const QBrush grey(Qt::gray);
      for (int c = 0; c < columnCount(); ++c) item->setForeground(c, grey);
      for (int r = 0; r < item->childCount(); ++r) {
        for (int c = 0; c < columnCount(); ++c) item->child(r)->setForeground(c, grey);
      }
    }
    item->setExpanded(i < expanded.size() ? expanded[i] : rows.size() == 1);
  }
  for (int c = 0; c < columnCount() - 1; ++c) resizeColumnToContents(c);
}

}  // namespace trainscope::viewer

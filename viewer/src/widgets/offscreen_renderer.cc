#include "trainscope/viewer/widgets/offscreen_renderer.h"

#include <QApplication>
#include <QPainter>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainscope/viewer/widgets/alerts_widget.h"
#include "trainscope/viewer/widgets/draw_list_painter.h"
#include "trainscope/viewer/widgets/monitoring_view.h"
#include "trainscope/viewer/widgets/range_stats_panel.h"
#include "trainscope/viewer/widgets/table_widgets.h"

namespace trainscope::viewer {
namespace {

QImage Paint(const DrawList& list, int width, int height) {
  QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter painter(&image);
  DrawListPainter::Paint(&painter, list);
  return image;
}

QImage Grab(QWidget* widget, int width, int height) {
  widget->setAttribute(Qt::WA_DontShowOnScreen);
  widget->resize(width, height);
  widget->show();
  QApplication::processEvents();
  QImage image = widget->grab().toImage();
  widget->hide();
  return image;
}

}  // namespace

const std::vector<std::string>& OffscreenRenderer::Views() {
  static const std::vector<std::string> kViews = {"overview",  "marey",      "alerts", "jobs",
                                                  "selection", "monitoring", "traffic-matrix",
                                                  "topology",  "trend",      "chord",
                                                  "hilbert-ring", "range-stats", "all"};
  return kViews;
}

absl::StatusOr<QImage> OffscreenRenderer::Render(ViewerState* state, const std::string& view,
                                                 int width, int height,
                                                 const MainWindow::Config& window_config) {
  state->SyncSelection();
  if (view == "overview") {
    state->overview.SetViewport(width, height);
    return Paint(state->overview.Draw(), width, height);
  }
  if (view == "marey") {
    state->marey.SetViewport(width, height);
    return Paint(state->marey.Draw(), width, height);
  }
  if (view == "traffic-matrix") {
    state->traffic_matrix.SetViewport(width, height);
    return Paint(state->traffic_matrix.Draw(), width, height);
  }
  // The cluster views (issue 24), each at the level it was given.
  for (const auto& [name, layout] : std::initializer_list<std::pair<const char*, ClusterView*>>{
           {"topology", &state->topology},
           {"trend", &state->trend},
           {"chord", &state->chord},
           {"hilbert-ring", &state->hilbert_ring}}) {
    if (view != name) continue;
    layout->SetViewport(width, height);
    return Paint(layout->Draw(), width, height);
  }
  if (view == "selection") {
    state->loss.SetSelectionViewport(width, height);
    return Paint(state->loss.DrawSelection(), width, height);
  }
  if (view == "monitoring") {
    // Grabbed, not painted: the iteration slider is part of the view.
    MonitoringView widget(&state->loss);
    widget.Refresh();
    return Grab(&widget, width, height);
  }
  if (view == "alerts") {
    AlertsWidget widget;
    widget.Refresh(state->alerts);
    return Grab(&widget, width, height);
  }
  if (view == "jobs") {
    JobsWidget widget;
    widget.Refresh(state->jobs);
    widget.expandAll();
    return Grab(&widget, width, height);
  }
  if (view == "range-stats") {
    state->range_stats.Update(state->marey.store(), state->names, 0);
    RangeStatsPanel widget(&state->range_stats);
    widget.Refresh();
    return Grab(&widget, width, height);
  }
  if (view == "all") {
    MainWindow window(state, nullptr, window_config);
    return Grab(&window, width, height);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--render: unknown view '", view,
                   "' (expected one of: ", absl::StrJoin(Views(), ", "), ", each)"));
}

}  // namespace trainscope::viewer

// Lays out the Monitoring View of the loss-contribution views for the
// chosen item at the slider's iteration: a title with the iteration, the
// input image with its label and output at the left, one column per
// monitored layer (C_h on top, R_h below, nearest-neighbour whole
// multiples), and at the right the shared colour bar (both ramps on the
// frame's one scale) with its ticks.
//
// Usage:
//   LossMonitoringLayout layout;
//   layout.Lay({.width = 1200, .height = 500, .frame = model.CurrentFrame(), .state = &state});
//   const DrawList& maps = layout.list();
//   RectF first_map = layout.geometry().columns[0].contribution_rect;
//
// Threading: not thread-safe; a plain value owned by one thread.
#ifndef TRAINSCOPE_VIEWER_LOSS_MONITORING_LAYOUT_H_
#define TRAINSCOPE_VIEWER_LOSS_MONITORING_LAYOUT_H_

#include <optional>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/loss_view_records.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class LossMonitoringLayout {
 public:
  struct Input {
    int width = 800;
    int height = 500;
    std::optional<LossFrame> frame;          // nullopt: the placeholder
    const LossStateRecord* state = nullptr;  // the selection layer, the list's length
    bool fetching = false;                   // the frame's snapshots are still being fetched
  };

  void Lay(const Input& input);

  const DrawList& list() const { return list_; }
  const LossMonitoringGeometry& geometry() const { return geometry_; }

 private:
  DrawList list_;
  LossMonitoringGeometry geometry_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LOSS_MONITORING_LAYOUT_H_

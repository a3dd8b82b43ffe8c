// What the cluster views (topology, trends, chord diagram, Hilbert ring)
// share, so one widget paints any of them and routes the mouse: a layout
// that draws into a DrawList, names what is under a point, and turns a
// click or a lasso into a selection of devices or a link in the shared
// SelectionState (linked selection: every view highlights it).
//
// Usage:
//   ClusterView* view = &state.topology;
//   view->SetViewport(w, h);
//   painter.Paint(view->Draw());
//   if (view->ClickAt(x, y)) RefreshAllViews();
//
// Threading: not thread-safe; the UI thread owns the views.
#ifndef TRAINSCOPE_VIEWER_CLUSTER_VIEW_H_
#define TRAINSCOPE_VIEWER_CLUSTER_VIEW_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual void SetViewport(int width, int height) = 0;
  virtual void SetLevel(ClusterLevel level) = 0;
  virtual ClusterLevel level() const = 0;
  // Recomputed only when stale.
  virtual const DrawList& Draw() = 0;
  // Hover text for the element under the point; "" for none.
  virtual std::string TooltipAt(float x, float y) = 0;
  // Selects what is under the point (a link, a unit's devices); returns
  // whether the selection changed. A click on nothing clears it.
  virtual bool ClickAt(float x, float y) = 0;
  // Selects the devices inside the polygon; returns whether any were.
  virtual bool LassoSelect(const std::vector<PointF>& polygon) {
    (void)polygon;
    return false;
  }
  // Backs out of a zoom (the Hilbert ring's blocks); returns whether it did.
  virtual bool BackOut() { return false; }
  // Views that animate between layouts (the chord diagram): how many new
  // layouts could start a transition from what was shown, and the share of
  // the way one is shown (0: the old, 1: the new, where Draw starts).
  virtual uint64_t transitions() { return 0; }
  virtual void SetTransition(double t) { (void)t; }
  // Views that filter their devices (the Hilbert ring, RingFilter) take the
  // filter as text; the widget shows a box for it.
  virtual bool filterable() const { return false; }
  virtual absl::Status SetFilterText(const std::string& text) {
    return absl::UnimplementedError("this view has no filter (given '" + text + "')");
  }

 protected:
  // Every setter of a view: stores a value its layout is built from and
  // marks the view stale (rebuilt on the next Draw) only when it changed.
  template <typename T, typename V>
  void SetField(T* field, V&& value) {
    if (*field == value) return;
    *field = std::forward<V>(value);
    dirty_ = true;
  }

  // Rebuild on the next Draw.
  bool dirty_ = true;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_CLUSTER_VIEW_H_

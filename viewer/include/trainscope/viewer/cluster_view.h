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

#include <string>
#include <utility>
#include <vector>

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

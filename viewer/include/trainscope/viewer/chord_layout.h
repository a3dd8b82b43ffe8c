// The hierarchical chord diagram (issue 24.3, after GiViP): the traffic
// between the units of a level (devices, hosts or racks) on a circle, their
// ancestors as concentric rings outside it (host, then rack). Each unit's
// arc is split into what it sends (its colour) and, after it, what it
// receives (a darker interval); the arc's angle is proportional to that
// traffic (transfer time or bytes), so arcs sum to the traffic, and its
// thickness grows with its self-traffic (inside the unit: a host's own
// devices talking). A ribbon runs from the source's out interval to the
// destination's in interval, as wide at each end as their traffic, coloured
// by its source. Units keep the hierarchy's grouping (a host's devices, a
// rack's hosts stay together: the ancestor rings stay whole) and, within
// it, a crossing-reducing order (ChordOrder: barycentre sweeps, never more
// crossings than the hierarchy's plain order; SetCrossingReduction(false)
// keeps the plain one); each arc's ribbons leave it clockwise-farthest
// partner first, so they fan out without crossing at the arc. Ribbons narrower
// than kMinRibbonPx at both ends (a 1,024-device ring: a thousand ribbons a
// pixel wide) are drawn as one bundle per pair of parent units (devices:
// their hosts; hosts: their racks) spanning its members' ends, a petal when
// both parents are one, so what is painted is bounded by what can be seen;
// the heaviest and the selected ribbon are always drawn alone. Colours are
// opaque (a translucent colour over the white background, precomputed).
//
// Changes between frames are smooth: a new layout of the same units (new
// traffic) counts a transition (transitions()), and SetTransition(t) shows
// the layout t of the way from what was shown before (Interpolate), so the
// widget animates arcs and ribbons over ~200 ms. A plain Draw (tests,
// --render) shows the new layout. The angles are laid out only when the
// data, level, measure or order change; a new size only repaints.
//
// Usage:
//   ChordLayout chord(&hierarchy, &selection);
//   chord.SetLevel(ClusterLevel::kHost);
//   chord.SetViewport(1000, 800);
//   const DrawList& list = chord.Draw();
//   std::string hover = chord.TooltipAt(x, y);
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_CHORD_LAYOUT_H_
#define TRAINSCOPE_VIEWER_CHORD_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/chord_order.h"
#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/cluster_view.h"
#include "trainscope/viewer/selection_state.h"

namespace trainscope::viewer {

class ChordLayout : public ClusterView {
 public:
  static constexpr size_t kMaxRibbons = 3000;
  static constexpr double kMinRibbonPx = 1.5;
  enum class Measure : uint8_t { kTransferTime, kBytes };

  // Angles in radians, clockwise from 12 o'clock.
  struct Arc {
    size_t unit = 0;
    double out_start = 0, out_end = 0;  // what it sends
    double in_start = 0, in_end = 0;    // what it receives (darker)
    double out = 0, in = 0, self = 0;   // in the measure
    float thickness = 0;
  };
  struct Ribbon {
    size_t src = 0, dst = 0;  // units
    double value = 0;
    double src_start = 0, src_end = 0;
    double dst_start = 0, dst_end = 0;
    std::vector<PointF> polygon;  // empty: drawn in its bundle
    bool selected = false;
    size_t bundle = SIZE_MAX;  // index in bundles()
  };
  // Thin ribbons between two parent units, drawn as one.
  struct Bundle {
    size_t src_parent = 0, dst_parent = 0;  // units one level up (racks: the units)
    size_t flows = 0;
    double value = 0;
    double src_start = 0, src_end = 0;  // the union of its members' ends
    double dst_start = 0, dst_end = 0;
    std::vector<PointF> polygon;
  };

  // The angles and values of a layout, without the shapes painted.
  struct Geometry {
    std::vector<Arc> arcs;        // by unit
    std::vector<Ribbon> ribbons;  // by source, then destination
    double scale = 0;             // radians per unit of the measure
  };

  // The layout t of the way from a to b (0: a, 1: b): each arc's and
  // ribbon's angles, value and thickness linearly between its two; a ribbon
  // on one side only is, on the other, empty at the end of its arcs' out and
  // in intervals, so at every t each arc's ribbons still sum to it. Layouts
  // of different units: b.
  static Geometry Interpolate(const Geometry& a, const Geometry& b, double t);

  ChordLayout(ClusterHierarchy* hierarchy, SelectionState* selection);

  void SetViewport(int width, int height) override;
  void SetLevel(ClusterLevel level) override;
  ClusterLevel level() const override { return level_; }
  void SetMeasure(Measure measure);
  // On (the default): the crossing-reducing order; off: the hierarchy's.
  void SetCrossingReduction(bool on);
  uint64_t transitions() override { return Draw(), transitions_; }
  void SetTransition(double t) override;

  const DrawList& Draw() override;
  std::string TooltipAt(float x, float y) override;
  bool ClickAt(float x, float y) override;

  // As shown (mid-transition: interpolated).
  const std::vector<Arc>& arcs() { return Draw(), arcs_; }
  // Heaviest first.
  const std::vector<Ribbon>& ribbons() { return Draw(), ribbons_; }
  const std::vector<Bundle>& bundles() { return Draw(), bundles_; }
  // Radians per unit of the measure.
  double scale() { return Draw(), scale_; }
  PointF centre() { return Draw(), centre_; }
  // The units in circle order (clockwise from 12 o'clock).
  const std::vector<size_t>& order() { return Draw(), order_; }
  // Pairs of chords (units with traffic either way) crossing in order().
  uint64_t crossings() { return Draw(), crossings_; }
  // The new layout a transition goes to.
  const Geometry& target() { return Draw(), target_; }
  float radius() { return Draw(), radius_; }

 private:
  // The angles, from the data (stale_ or a new version).
  void Layout();
  // The shapes, from the angles shown.
  void Paint();
  std::vector<size_t> CrossingReducingOrder();
  // The level's unit pairs with traffic either way, weighted in the measure.
  std::vector<ChordOrder::Link> UndirectedLinks(ClusterLevel level);
  std::optional<size_t> ArcAt(float x, float y);
  std::optional<size_t> RibbonAt(float x, float y);
  std::optional<size_t> BundleAt(float x, float y);
  // The unit one level up that bundles a unit's thin ribbons.
  size_t BundleParent(size_t unit);

  ClusterHierarchy* hierarchy_;
  SelectionState* selection_;
  ClusterLevel level_ = ClusterLevel::kHost;
  Measure measure_ = Measure::kTransferTime;
  int width_ = 800;
  int height_ = 600;
  uint64_t built_hierarchy_ = UINT64_MAX;
  uint64_t built_traffic_ = UINT64_MAX;
  uint64_t built_selection_ = UINT64_MAX;
  ClusterLevel built_level_ = ClusterLevel::kHost;
  bool stale_ = true;  // the angles need laying out again
  bool reduce_crossings_ = true;
  bool no_traffic_ = false;
  std::vector<size_t> order_;
  uint64_t crossings_ = 0;
  Geometry target_;
  Geometry from_;
  double progress_ = 1;
  uint64_t transitions_ = 0;
  DrawList list_;
  std::vector<Arc> arcs_;
  std::vector<Ribbon> ribbons_;
  std::vector<Bundle> bundles_;
  double scale_ = 0;
  PointF centre_;
  float radius_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_CHORD_LAYOUT_H_

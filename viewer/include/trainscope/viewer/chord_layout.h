// The hierarchical chord diagram (issue 24.3, after GiViP): the traffic
// between the units of a level (devices, hosts or racks) on a circle, their
// ancestors as concentric rings outside it (host, then rack). Each unit's
// arc is split into what it sends (its colour) and, after it, what it
// receives (a darker interval); the arc's angle is proportional to that
// traffic (transfer time or bytes), so arcs sum to the traffic, and its
// thickness grows with its self-traffic (inside the unit: a host's own
// devices talking). A ribbon runs from the source's out interval to the
// destination's in interval, as wide at each end as their traffic, coloured
// by its source. Units follow the hierarchy's order (rack, host, rank), so
// ribbons within a host or rack stay short and cross less. Ribbons narrower
// than kMinRibbonPx at both ends (a 1,024-device ring: a thousand ribbons a
// pixel wide) are drawn as one bundle per pair of parent units (devices:
// their hosts; hosts: their racks) spanning its members' ends, a petal when
// both parents are one, so what is painted is bounded by what can be seen;
// the heaviest and the selected ribbon are always drawn alone. Colours are
// opaque (a translucent colour over the white background, precomputed).
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

  ChordLayout(ClusterHierarchy* hierarchy, SelectionState* selection);

  void SetViewport(int width, int height) override;
  void SetLevel(ClusterLevel level) override;
  ClusterLevel level() const override { return level_; }
  void SetMeasure(Measure measure);

  const DrawList& Draw() override;
  std::string TooltipAt(float x, float y) override;
  bool ClickAt(float x, float y) override;

  const std::vector<Arc>& arcs() { return Draw(), arcs_; }
  // Heaviest first.
  const std::vector<Ribbon>& ribbons() { return Draw(), ribbons_; }
  const std::vector<Bundle>& bundles() { return Draw(), bundles_; }
  // Radians per unit of the measure.
  double scale() { return Draw(), scale_; }
  PointF centre() { return Draw(), centre_; }
  float radius() { return Draw(), radius_; }

 private:
  void Rebuild();
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

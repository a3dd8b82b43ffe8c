// The Hilbert ring (issue 24.4, after Cheng et al.): for large device sets,
// every device a mark on a ring, in the order of a Hilbert curve over its
// coordinates (torus or mesh coordinates when known, SetCoordinates; else
// the hierarchy's rack, host, rank order), so devices close in the machine
// stay close on the ring. Address tracks at the rim name each device's host
// and rack as blocks; the traffic is drawn inside as edges bundled through
// their blocks (hierarchical edge bundling: a device's edge leaves through
// its host's, then its rack's, bundle point), wider and darker red the
// more transfer time, so one slow link stands out among a thousand devices.
// At the host or rack level the edges join blocks instead. A device's mark
// is coloured by its efficiency (red outline: an alert); selected devices
// and the selected link are blue.
//
// Filters (SetFilter: by host, rack, or a range of a mesh coordinate) and
// zooms (a click on a host or rack block of the address tracks: its devices
// fill the ring; BackOut or the "back out" button returns) only drop devices
// from the ring: the shown ones keep the order the whole ring has (the
// Hilbert order is computed over every device, then filtered), so devices
// close on the whole ring stay at least as close on a filtered or zoomed
// one. At the host and rack levels a unit is shown when any of its devices
// is, with its whole traffic.
// With more than kBundleAbove edges, the thin ones (under kThinEdgePx) join
// one bundle per pair of parent units (devices: hosts; hosts: racks), drawn
// once from their ends' blocks, so a frame costs what can be seen; the
// heaviest and the selected edge are always drawn alone. Colours are opaque
// (a translucent colour over the white background, precomputed).
//
// This class coordinates (the viewport, filter, zooms, the draw list and
// hit testing); the ring order is HilbertOrder's, where the ring's parts
// lie HilbertRingGeometry's, and which edges are bundled RingEdgeBundler's.
//
// Usage:
//   HilbertRingLayout ring(&hierarchy, &trends, &selection);
//   ring.SetCoordinates({{0, {0, 0}}, {1, {0, 1}}, ...});  // optional
//   ring.SetViewport(1000, 1000);
//   const DrawList& list = ring.Draw();
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_HILBERT_RING_LAYOUT_H_
#define TRAINSCOPE_VIEWER_HILBERT_RING_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/cluster_view.h"
#include "trainscope/viewer/hilbert_ring_geometry.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/ring_filter.h"
#include "trainscope/viewer/selection_state.h"
#include "trainscope/viewer/unit_trend_model.h"

namespace trainscope::viewer {

class HilbertRingLayout : public ClusterView {
 public:
  static constexpr size_t kMaxEdges = 3000;
  static constexpr size_t kBundleAbove = 256;
  static constexpr float kThinEdgePx = 2;
  static constexpr size_t kSmoothEdges = 32;

  struct Edge {
    size_t a = 0, b = 0;  // units of the level
    double weight = 0;    // transfer time, both directions
    std::vector<PointF> path;
    float width = 1;
    bool selected = false;
  };
  // Thin edges between two parent units, drawn as one.
  struct Bundle {
    size_t a = 0, b = 0;  // units one level up (racks: the units), a <= b
    size_t flows = 0;
    double weight = 0;  // all its edges'
    std::vector<PointF> path;
    float width = 1;
  };

  HilbertRingLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends, SelectionState* selection);

  void SetViewport(int width, int height) override;
  void SetLevel(ClusterLevel level) override;
  ClusterLevel level() const override { return level_; }
  // Per rank (x, y) in a mesh or torus; used only when every device has them.
  void SetCoordinates(const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& coordinates);
  void SetAlerts(const std::vector<Alert>& alerts);
  // A host or rack: (level, unit index).
  using Block = std::pair<ClusterLevel, size_t>;
  // Only the devices of this unit of `level` (nullopt: all); forgets the
  // zooms before it.
  void FocusBlock(std::optional<Block> block);
  // Zooms into a block (its devices fill the ring); BackOut returns to the
  // ring before it. Clicking a block of the address tracks zooms into it.
  void ZoomInto(Block block);
  bool BackOut() override;
  std::optional<Block> zoom() const {
    return zooms_.empty() ? std::nullopt : std::optional<Block>(zooms_.back());
  }
  // Shows only the devices the filter accepts. Refused (and the filter kept)
  // when it names a host or rack the job does not have, or filters on a
  // coordinate while the devices have none (SetCoordinates).
  absl::Status SetFilter(const RingFilter& filter);
  const RingFilter& filter() const { return filter_; }
  bool filterable() const override { return true; }
  absl::Status SetFilterText(const std::string& text) override;

  const DrawList& Draw() override;
  std::string TooltipAt(float x, float y) override;
  bool ClickAt(float x, float y) override;
  bool LassoSelect(const std::vector<PointF>& polygon) override;

  // Matrix indices in ring order (the devices shown).
  const std::vector<size_t>& ring_order() { return Draw(), ring_; }
  // The ring position of a device (matrix index), if shown.
  std::optional<size_t> PositionOf(size_t device);
  PointF DevicePoint(size_t device);
  // Drawn alone, heaviest first.
  const std::vector<Edge>& edges() { return Draw(), edges_; }
  const std::vector<Bundle>& bundles() { return Draw(), bundles_; }
  bool uses_coordinates() { return Draw(), uses_coordinates_; }

 private:
  void Rebuild();
  // Orders every device (Hilbert or hierarchy order), then keeps the shown
  // ones in ring_; returns how many devices there are in all.
  size_t PlaceDevices();
  // The rest draw the ring in geometry_ (at least one device shown).
  void DrawAddressTracks();
  // Device marks: efficiency colour, alert red, selected blue.
  void DrawDeviceMarks();
  // Builds edges_ and bundles_ and draws them; returns how many links the
  // level has among the shown units.
  size_t DrawLinks();
  std::optional<size_t> DeviceAt(float x, float y);
  std::optional<size_t> BundleAt(float x, float y);
  // The host or rack block of the address tracks under the point.
  std::optional<Block> BlockAt(float x, float y);
  bool Shown(size_t device);
  // The level whose units bundle thin edges: one up (racks: themselves).
  ClusterLevel BundleLevel() const;

  ClusterHierarchy* hierarchy_;
  UnitTrendModel* trends_;
  SelectionState* selection_;
  ClusterLevel level_ = ClusterLevel::kDevice;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> coordinates_;
  std::set<uint32_t> alert_ranks_;
  std::vector<Block> zooms_;  // innermost last
  RingFilter filter_;
  int width_ = 800;
  int height_ = 800;
  uint64_t built_hierarchy_ = UINT64_MAX;
  uint64_t built_traffic_ = UINT64_MAX;
  uint64_t built_trends_ = UINT64_MAX;
  uint64_t built_selection_ = UINT64_MAX;
  DrawList list_;
  std::vector<size_t> ring_;
  RectF back_button_;             // empty unless zoomed
  std::vector<size_t> position_;  // by matrix index; SIZE_MAX: not shown
  std::vector<Edge> edges_;
  std::vector<Bundle> bundles_;
  bool uses_coordinates_ = false;
  HilbertRingGeometry geometry_;  // of the last ring with devices
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_HILBERT_RING_LAYOUT_H_

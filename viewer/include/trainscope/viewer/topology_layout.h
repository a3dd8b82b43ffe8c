// The topology view (issue 24.2, after Wei et al.): the job's racks, hosts
// and devices as a node-link diagram. Hosts sit on a circle (grouped by
// rack), each a disc holding its devices; a node's area is its compute time
// per step and its colour its efficiency (compute over step time: green
// busy, orange-red waiting), a red outline when an alert names it. Edges
// join the pairs that exchanged traffic, typed by where their ends live
// (same host: teal, across hosts: purple) and weighted by transfer time
// (or bytes): the heavier, the wider and the closer to dark red, so a slow
// link is the widest, darkest edge. At the host or rack level the nodes
// and edges are those units and their summed traffic. A click on an edge
// selects that link, on a node its devices, a lasso the devices inside;
// the selection (SelectionState) is drawn blue here and in the other views.
//
// Usage:
//   TopologyLayout topology(&hierarchy, &trends, &selection);
//   topology.SetViewport(1200, 800);
//   topology.SetAlerts(alerts.open_alerts());
//   const DrawList& list = topology.Draw();
//   topology.ClickAt(x, y);               // selects a link or a unit
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_TOPOLOGY_LAYOUT_H_
#define TRAINSCOPE_VIEWER_TOPOLOGY_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/cluster_view.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/selection_state.h"
#include "trainscope/viewer/unit_trend_model.h"

namespace trainscope::viewer {

class TopologyLayout : public ClusterView {
 public:
  // Edges drawn at most (the heaviest; the selected one always).
  static constexpr size_t kMaxEdges = 4000;
  enum class Weight : uint8_t { kTransferTime, kBytes };

  struct Node {
    size_t unit = 0;  // index in the level's units
    PointF centre;
    float radius = 0;
    double efficiency = 0;
    bool alert = false;
    bool selected = false;
  };
  // An unordered pair of units; `forward` is a -> b (a < b), `backward` b -> a.
  struct Edge {
    size_t a = 0;
    size_t b = 0;
    TrafficModel::Cell forward;
    TrafficModel::Cell backward;
    double weight = 0;  // of both directions, in the chosen measure
    bool cross_host = false;
    float width = 1;
    bool selected = false;
  };

  TopologyLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends, SelectionState* selection);

  void SetViewport(int width, int height) override;
  void SetLevel(ClusterLevel level) override;
  ClusterLevel level() const override { return level_; }
  void SetWeight(Weight weight);
  // Open alerts: their devices get a red outline; a slow_link alert's link
  // is drawn red too.
  void SetAlerts(const std::vector<Alert>& alerts);

  const DrawList& Draw() override;
  std::string TooltipAt(float x, float y) override;
  bool ClickAt(float x, float y) override;
  bool LassoSelect(const std::vector<PointF>& polygon) override;

  // For tests: the laid-out nodes (one per unit) and edges (heaviest first).
  const std::vector<Node>& nodes() { return Draw(), nodes_; }
  const std::vector<Edge>& edges() { return Draw(), edges_; }
  // The edge between two units, if drawn.
  std::optional<size_t> EdgeBetween(size_t a, size_t b);
  // Where a device (matrix index) sits at the device level.
  PointF DevicePosition(size_t device);

 private:
  void Rebuild();
  std::optional<size_t> NodeAt(float x, float y);
  std::optional<size_t> EdgeAt(float x, float y);
  std::vector<uint32_t> RanksOf(size_t unit);

  ClusterHierarchy* hierarchy_;
  UnitTrendModel* trends_;
  SelectionState* selection_;
  ClusterLevel level_ = ClusterLevel::kDevice;
  Weight weight_ = Weight::kTransferTime;
  int width_ = 800;
  int height_ = 600;
  std::set<uint32_t> alert_ranks_;
  std::set<std::pair<uint32_t, uint32_t>> alert_links_;
  uint64_t built_hierarchy_ = UINT64_MAX;
  uint64_t built_traffic_ = UINT64_MAX;
  uint64_t built_trends_ = UINT64_MAX;
  uint64_t built_selection_ = UINT64_MAX;
  DrawList list_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<PointF> device_positions_;  // by matrix index
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_TOPOLOGY_LAYOUT_H_

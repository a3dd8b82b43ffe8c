#include "trainscope/viewer/topology_layout.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

SyntheticJobOptions SlowLinkJob() {
  SyntheticJobOptions options;
  options.devices = 16;
  options.hosts = 4;
  options.racks = 2;
  options.steps = 6;
  options.straggler.reset();
  options.slow_link = std::make_pair(12u, 13u);
  return options;
}

TEST(TopologyLayoutTest, NodesSitInTheirHostsAndTheSlowLinkIsTheHeaviestEdge) {
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob()));
  TopologyLayout& topology = state.topology;
  topology.SetViewport(1200, 900);
  const auto& nodes = topology.nodes();
  ASSERT_EQ(nodes.size(), 16u);
  // No two nodes overlap, and each lies inside the viewport.
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_GT(nodes[i].centre.x - nodes[i].radius, 0);
    EXPECT_LT(nodes[i].centre.x + nodes[i].radius, 1200);
    for (size_t j = i + 1; j < nodes.size(); ++j) {
      const float d =
          std::hypot(nodes[i].centre.x - nodes[j].centre.x, nodes[i].centre.y - nodes[j].centre.y);
      EXPECT_GE(d, nodes[i].radius + nodes[j].radius) << i << " " << j;
    }
  }
  const auto& edges = topology.edges();
  ASSERT_FALSE(edges.empty());
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const size_t a = state.hierarchy.UnitOf(ClusterLevel::kDevice, *m.IndexOf(12));
  const size_t b = state.hierarchy.UnitOf(ClusterLevel::kDevice, *m.IndexOf(13));
  EXPECT_EQ(std::minmax(edges.front().a, edges.front().b), std::minmax(a, b));
  for (size_t i = 1; i < edges.size(); ++i) EXPECT_LT(edges[i].width, edges.front().width - 3);
  // Edges are typed by where their ends live.
  bool same = false, cross = false;
  for (const auto& e : edges) (e.cross_host ? cross : same) = true;
  EXPECT_TRUE(same);
  EXPECT_TRUE(cross);
}

TEST(TopologyLayoutTest, ClickingTheSlowEdgeSelectsTheLinkAndFiltersNothingElse) {
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob()));
  TopologyLayout& topology = state.topology;
  topology.SetViewport(1200, 900);
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const PointF p12 = topology.DevicePosition(*m.IndexOf(12));
  const PointF p13 = topology.DevicePosition(*m.IndexOf(13));
  // A point on the edge away from both nodes.
  const PointF mid{(p12.x + p13.x) / 2, (p12.y + p13.y) / 2};
  ASSERT_TRUE(topology.ClickAt(mid.x, mid.y));
  EXPECT_EQ(state.selection.selected_link(), std::make_pair(12u, 13u));
  state.SyncSelection();
  EXPECT_EQ(state.traffic_matrix.shown().size(), 16u);  // a link outlines, not filters
  // The selected edge is drawn blue below it.
  bool blue = false;
  for (const Polygon& p : topology.Draw().polygons)
    blue = blue || (p.fill & 0xFFFFFF) == (kSelectColor & 0xFFFFFF);
  EXPECT_TRUE(blue);
  // A lasso around host node-0's devices selects them and focuses the matrix.
  std::vector<PointF> lasso;
  float x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9;
  for (uint32_t r = 0; r < 4; ++r) {
    const PointF p = topology.DevicePosition(*m.IndexOf(r));
    x0 = std::min(x0, p.x), y0 = std::min(y0, p.y), x1 = std::max(x1, p.x), y1 = std::max(y1, p.y);
  }
  lasso = {{x0 - 3, y0 - 3}, {x1 + 3, y0 - 3}, {x1 + 3, y1 + 3}, {x0 - 3, y1 + 3}};
  ASSERT_TRUE(topology.LassoSelect(lasso));
  EXPECT_EQ(state.selection.selected_ranks(), (std::set<uint32_t>{0, 1, 2, 3}));
  state.SyncSelection();
  EXPECT_EQ(state.traffic_matrix.shown().size(), 4u);
  // A click on empty space clears it.
  EXPECT_TRUE(topology.ClickAt(2, 890));
  EXPECT_TRUE(state.selection.selected_ranks().empty());
}

TEST(TopologyLayoutTest, TheSlowLinkAlertSelectsTheLinkAndHostLevelAggregates) {
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob()));
  size_t row = SIZE_MAX;
  for (size_t i = 0; i < 8; ++i) {
    const Alert* a = state.alerts.AtRow(i);
    if (a != nullptr && a->rule == "slow_link") row = i;
  }
  ASSERT_NE(row, SIZE_MAX);
  state.SelectAlert(row);
  EXPECT_EQ(state.selection.selected_link(), std::make_pair(12u, 13u));
  TopologyLayout& topology = state.topology;
  topology.SetViewport(1000, 800);
  bool selected = false;
  for (const auto& e : topology.edges()) selected = selected || e.selected;
  EXPECT_TRUE(selected);
  topology.SetLevel(ClusterLevel::kHost);
  ASSERT_EQ(topology.nodes().size(), 4u);
  topology.SetLevel(ClusterLevel::kRack);
  ASSERT_EQ(topology.nodes().size(), 2u);
  ASSERT_EQ(topology.edges().size(), 1u);  // the ring crosses between the two racks
  EXPECT_TRUE(topology.edges()[0].cross_host);
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/ring_edge_bundler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainscope/viewer/cluster_geometry.h"

namespace trainscope::viewer {
namespace {

using Edge = RingEdgeBundler::Edge;

RingEdgeBundler::Options Small() { return {.max_edges = 6, .bundle_above = 3, .thin_edge_px = 2}; }

TEST(RingEdgeBundlerTest, FewEdgesAreAllDrawnAlone) {
  const std::vector<Edge> edges = {{0, 1, 0.1, 0.2, 100}, {0, 1, 0.3, 0.4, 1}, {1, 1, 1, 2, 1}};
  const RingEdgeBundler::Result r = RingEdgeBundler::Split(edges, Small());
  EXPECT_EQ(r.alone, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(r.bundles.empty());
  EXPECT_DOUBLE_EQ(r.max_weight, 100);
}

TEST(RingEdgeBundlerTest, WidthsRunFromAHairlineToEightPixels) {
  const RingEdgeBundler::Result r = RingEdgeBundler::Split({{0, 0, 0, 0, 70}}, Small());
  EXPECT_FLOAT_EQ(r.WidthOf(70), 8);
  EXPECT_FLOAT_EQ(r.WidthOf(35), 4.5f);
  EXPECT_FLOAT_EQ(r.WidthOf(10), 2);  // at thin_edge_px: drawn wide
  EXPECT_FLOAT_EQ(r.WidthOf(9), 1);   // under it: a hairline
  // No edges, or only weightless ones: no division by zero.
  EXPECT_DOUBLE_EQ(RingEdgeBundler::Split({}, Small()).max_weight, 1);
  EXPECT_GT(RingEdgeBundler::Split({{0, 0, 0, 0, 0}}, Small()).max_weight, 0);
}

TEST(RingEdgeBundlerTest, ManyThinEdgesJoinOneBundlePerParentPair) {
  // Heaviest first: one wide edge, then thin ones between parents 2 and 0
  // (given either way round) and inside parent 1.
  const std::vector<Edge> edges = {
      {0, 2, 0.5, 2.5, 100},     // wide: alone
      {2, 0, 2.0, 0.2, 5},       // thin, parents swapped: its angles swap too
      {0, 2, 0.4, 2.2, 5},       //
      {1, 1, 1.2, 1.6, 4},       // thin, inside parent 1
      {1, 1, 1.0, -kPi / 2, 3},  // a negative angle counts as 3 pi / 2
      {0, 1, 0.3, 1.1, 50},      // wide: alone
  };
  const RingEdgeBundler::Result r = RingEdgeBundler::Split(edges, Small());
  EXPECT_EQ(r.alone, (std::vector<size_t>{0, 5}));
  ASSERT_EQ(r.bundles.size(), 2u);
  const RingEdgeBundler::Bundle& across = r.bundles[0];
  EXPECT_EQ(across.a, 0u);
  EXPECT_EQ(across.b, 2u);
  EXPECT_EQ(across.flows, 2u);
  EXPECT_DOUBLE_EQ(across.weight, 10);
  // The circular mean of the parent-0 ends (0.2 and 0.4) and parent-2 ends.
  EXPECT_NEAR(across.angle_a, 0.3, 1e-9);
  EXPECT_NEAR(across.angle_b, 2.1, 1e-9);
  const RingEdgeBundler::Bundle& inside = r.bundles[1];
  EXPECT_EQ(inside.a, 1u);
  EXPECT_EQ(inside.b, 1u);
  EXPECT_EQ(inside.flows, 2u);
  // A loop from the lowest to the highest end, angles in [0, 2 pi).
  EXPECT_DOUBLE_EQ(inside.angle_a, 1.0);
  EXPECT_NEAR(inside.angle_b, 3 * kPi / 2, 1e-12);
}

TEST(RingEdgeBundlerTest, TheSelectedEdgeStaysAloneAndThinOnesPastTheMaxAreBundled) {
  std::vector<Edge> edges = {{0, 1, 0, 1, 100}};
  for (int i = 0; i < 8; ++i) edges.push_back({0, 1, 0, 1, 1});
  edges[4].selected = true;
  RingEdgeBundler::Options options = Small();
  const RingEdgeBundler::Result r = RingEdgeBundler::Split(edges, options);
  EXPECT_EQ(r.alone, (std::vector<size_t>{0, 4}));
  ASSERT_EQ(r.bundles.size(), 1u);
  EXPECT_EQ(r.bundles[0].flows, 7u);
  // Without bundling (few edges allowed to be many), those past max_edges
  // are dropped, the selected one kept.
  options.bundle_above = 100;
  options.max_edges = 3;
  edges[4].selected = false;
  edges[7].selected = true;
  const RingEdgeBundler::Result unbundled = RingEdgeBundler::Split(edges, options);
  EXPECT_EQ(unbundled.alone, (std::vector<size_t>{0, 1, 2, 7}));
  EXPECT_TRUE(unbundled.bundles.empty());
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/hilbert_ring_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

TEST(HilbertIndexTest, ConsecutiveIndicesAreGridNeighboursAndCoverTheGrid) {
  const uint32_t bits = 5, side = 1u << bits;
  std::vector<std::pair<uint32_t, uint32_t>> by_index(side * side, {UINT32_MAX, 0});
  for (uint32_t x = 0; x < side; ++x) {
    for (uint32_t y = 0; y < side; ++y) {
      const uint64_t d = HilbertIndex(bits, x, y);
      ASSERT_LT(d, by_index.size());
      ASSERT_EQ(by_index[d].first, UINT32_MAX) << "two points on index " << d;
      by_index[d] = {x, y};
    }
  }
  for (size_t d = 1; d < by_index.size(); ++d) {
    const int dx =
        std::abs(static_cast<int>(by_index[d].first) - static_cast<int>(by_index[d - 1].first));
    const int dy =
        std::abs(static_cast<int>(by_index[d].second) - static_cast<int>(by_index[d - 1].second));
    EXPECT_EQ(dx + dy, 1) << "index " << d;
  }
}

// Devices on a 32 x 32 mesh: grid neighbours end up far closer on the ring
// in Hilbert order than in rank (row-major) order.
TEST(HilbertRingLayoutTest, HilbertOrderKeepsMeshNeighboursClose) {
  SyntheticJobOptions options;
  options.devices = 1024;
  options.hosts = 128;
  options.racks = 8;
  options.steps = 2;
  options.compute_ops_per_step = 2;
  options.collectives_per_step = 1;
  options.straggler.reset();
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  HilbertRingLayout& ring = state.hilbert_ring;
  ring.SetViewport(1000, 1000);
  const TrafficModel::Matrix& m = state.traffic.matrix();
  // The share of mesh neighbours at most 8 positions apart on the ring.
  auto close_share = [&]() {
    size_t close = 0, count = 0;
    const size_t n = ring.ring_order().size();
    for (uint32_t r = 0; r < 1024; ++r) {
      for (uint32_t s : {r + 1, r + 32}) {
        if (s >= 1024 || (s == r + 1 && s % 32 == 0)) continue;
        const size_t a = *ring.PositionOf(*m.IndexOf(r)), b = *ring.PositionOf(*m.IndexOf(s));
        const size_t gap = a > b ? a - b : b - a;
        close += std::min(gap, n - gap) <= 8;
        ++count;
      }
    }
    return static_cast<double>(close) / static_cast<double>(count);
  };
  EXPECT_FALSE(ring.uses_coordinates());
  const double rank_order = close_share();  // row-major: only the row neighbours
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> mesh;
  for (uint32_t r = 0; r < 1024; ++r) mesh[r] = {r % 32, r / 32};
  ring.SetCoordinates(mesh);
  EXPECT_TRUE(ring.uses_coordinates());
  const double hilbert = close_share();
  EXPECT_LT(rank_order, 0.55);
  EXPECT_GT(hilbert, rank_order + 0.2) << hilbert << " vs " << rank_order;
  // Every aligned 4 x 4 square of the mesh is 16 consecutive ring positions.
  for (uint32_t bx = 0; bx < 32; bx += 4) {
    for (uint32_t by = 0; by < 32; by += 4) {
      size_t lo = SIZE_MAX, hi = 0;
      for (uint32_t x = bx; x < bx + 4; ++x) {
        for (uint32_t y = by; y < by + 4; ++y) {
          const size_t p = *ring.PositionOf(*m.IndexOf(y * 32 + x));
          lo = std::min(lo, p), hi = std::max(hi, p);
        }
      }
      EXPECT_EQ(hi - lo, 15u) << bx << "," << by;
    }
  }
  // Consecutive ring positions are mesh neighbours.
  const auto& order = ring.ring_order();
  for (size_t i = 1; i < order.size(); ++i) {
    const auto a = mesh[m.devices[order[i - 1]].rank], b = mesh[m.devices[order[i]].rank];
    EXPECT_EQ(std::abs(static_cast<int>(a.first) - static_cast<int>(b.first)) +
                  std::abs(static_cast<int>(a.second) - static_cast<int>(b.second)),
              1);
  }
}

TEST(HilbertRingLayoutTest, BlocksAreContiguousAndTheSlowLinkIsTheHeaviestBundle) {
  SyntheticJobOptions options;
  options.devices = 64;
  options.hosts = 8;
  options.racks = 2;
  options.steps = 4;
  options.straggler.reset();
  options.slow_link = std::make_pair(20u, 21u);
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  HilbertRingLayout& ring = state.hilbert_ring;
  ring.SetViewport(900, 900);
  const auto& order = ring.ring_order();
  ASSERT_EQ(order.size(), 64u);
  // Without coordinates each host is one run of the ring.
  size_t runs = 1;
  for (size_t i = 1; i < order.size(); ++i)
    runs += state.hierarchy.UnitOf(ClusterLevel::kHost, order[i]) !=
            state.hierarchy.UnitOf(ClusterLevel::kHost, order[i - 1]);
  EXPECT_EQ(runs, 8u);
  const auto& edges = ring.edges();
  ASSERT_FALSE(edges.empty());
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  EXPECT_EQ(units[edges.front().a].name, "rank 20");
  EXPECT_EQ(units[edges.front().b].name, "rank 21");
  EXPECT_GT(edges.front().width, edges[1].width + 3);
  // Bundled: a cross-rack edge passes near the centre (through the racks'
  // points), a same-host one stays out by the rim.
  for (const auto& e : edges) {
    float closest = 1e9f;
    for (const PointF& p : e.path) closest = std::min(closest, std::hypot(p.x - 450, p.y - 470));
    const size_t da = units[e.a].devices[0], db = units[e.b].devices[0];
    if (state.hierarchy.UnitOf(ClusterLevel::kRack, da) !=
        state.hierarchy.UnitOf(ClusterLevel::kRack, db)) {
      EXPECT_LT(closest, 250) << units[e.a].name << "-" << units[e.b].name;
    } else if (state.hierarchy.UnitOf(ClusterLevel::kHost, da) ==
               state.hierarchy.UnitOf(ClusterLevel::kHost, db)) {
      EXPECT_GT(closest, 200) << units[e.a].name << "-" << units[e.b].name;
    }
  }
  // Zoom into host node-2 (ranks 16-23).
  ring.FocusBlock(std::make_pair(ClusterLevel::kHost, size_t{2}));
  EXPECT_EQ(ring.ring_order().size(), 8u);
}

// 1,024 devices: the thin edges are hairlines in one bundle per host pair
// (a few hundred lines painted, not a thousand wide ones), the slow link
// drawn alone and widest; no link is lost.
TEST(HilbertRingLayoutTest, AThousandDevicesBundleThinEdgesByHostPair) {
  SyntheticJobOptions options;
  options.devices = 1024;
  options.hosts = 128;
  options.racks = 8;
  options.steps = 3;
  options.compute_ops_per_step = 4;
  options.collectives_per_step = 1;
  options.straggler.reset();
  options.slow_link = std::make_pair(12u, 13u);
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  HilbertRingLayout& ring = state.hilbert_ring;
  ring.SetViewport(1920, 1080);
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  const auto& edges = ring.edges();
  ASSERT_FALSE(edges.empty());
  EXPECT_EQ(units[edges.front().a].name, "rank 12");
  EXPECT_EQ(units[edges.front().b].name, "rank 13");
  EXPECT_GT(edges.front().width, 6);
  const auto& bundles = ring.bundles();
  ASSERT_FALSE(bundles.empty());
  // Every linked pair of devices is an edge or in a bundle of its hosts.
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (const auto& [a, b] : state.hierarchy.Links(ClusterLevel::kDevice))
    if (a != b) pairs.insert(std::minmax(a, b));
  size_t bundled = 0;
  for (const auto& b : bundles) {
    EXPECT_LE(b.a, b.b);
    EXPECT_LT(b.b, 128u);
    EXPECT_GE(b.flows, 1u);
    EXPECT_EQ(b.width, 1.0f);
    EXPECT_GT(b.path.size(), 2u);
    bundled += b.flows;
  }
  EXPECT_EQ(edges.size() + bundled, pairs.size());
  EXPECT_LT(ring.Draw().polylines.size(), 400u);
  for (const auto& e : edges) EXPECT_TRUE(e.width == 1.0f || e.width >= 2.0f) << e.width;
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/hilbert_ring_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

// 1,024 devices, 128 hosts of 8 in 8 racks of 128; on the 32 x 32 mesh of
// Mesh() (rank r at (r % 32, r / 32)) rack i holds mesh rows 4i to 4i + 3.
void LoadThousandDevices(ViewerState* state) {
  SyntheticJobOptions options;
  options.devices = 1024;
  options.hosts = 128;
  options.racks = 8;
  options.steps = 2;
  options.compute_ops_per_step = 2;
  options.collectives_per_step = 1;
  options.straggler.reset();
  state->Load(GenerateSyntheticJob(options));
  state->hilbert_ring.SetViewport(1000, 1000);
}

std::map<uint32_t, std::pair<uint32_t, uint32_t>> Mesh() {
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> mesh;
  for (uint32_t r = 0; r < 1024; ++r) mesh[r] = {r % 32, r / 32};
  return mesh;
}

void LoadMeshJob(ViewerState* state) {
  LoadThousandDevices(state);
  state->hilbert_ring.SetCoordinates(Mesh());
}

// Every aligned 4 x 4 square of mesh rows [row0, row1) is 16 consecutive
// ring positions.
void ExpectMeshSquaresConsecutive(ViewerState* state, uint32_t row0, uint32_t row1) {
  const TrafficModel::Matrix& m = state->traffic.matrix();
  for (uint32_t bx = 0; bx < 32; bx += 4) {
    for (uint32_t by = row0; by < row1; by += 4) {
      size_t lo = SIZE_MAX, hi = 0;
      for (uint32_t x = bx; x < bx + 4; ++x) {
        for (uint32_t y = by; y < by + 4; ++y) {
          const size_t p = *state->hilbert_ring.PositionOf(*m.IndexOf(y * 32 + x));
          lo = std::min(lo, p), hi = std::max(hi, p);
        }
      }
      EXPECT_EQ(hi - lo, 15u) << bx << "," << by;
    }
  }
}

// Devices on a 32 x 32 mesh: grid neighbours end up far closer on the ring
// in Hilbert order than in rank (row-major) order.
TEST(HilbertRingLayoutTest, HilbertOrderKeepsMeshNeighboursClose) {
  ViewerState state;
  LoadThousandDevices(&state);
  HilbertRingLayout& ring = state.hilbert_ring;
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
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> mesh = Mesh();
  ring.SetCoordinates(mesh);
  EXPECT_TRUE(ring.uses_coordinates());
  const double hilbert = close_share();
  EXPECT_LT(rank_order, 0.55);
  EXPECT_GT(hilbert, rank_order + 0.2) << hilbert << " vs " << rank_order;
  ExpectMeshSquaresConsecutive(&state, 0, 32);
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

// Whether `part` is `whole` with some elements left out (order kept).
bool IsSubsequence(const std::vector<size_t>& part, const std::vector<size_t>& whole) {
  size_t i = 0;
  for (size_t d : whole) i += i < part.size() && part[i] == d;
  return i == part.size();
}

// Each filter drops exactly the devices it refuses, and the rest keep the
// whole ring's Hilbert order.
TEST(HilbertRingLayoutTest, FiltersDropDevicesAndKeepTheHilbertOrder) {
  ViewerState state;
  LoadMeshJob(&state);
  HilbertRingLayout& ring = state.hilbert_ring;
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const std::vector<size_t> whole = ring.ring_order();
  ASSERT_EQ(whole.size(), 1024u);
  ASSERT_TRUE(ring.uses_coordinates());
  struct Case {
    const char* text;
    std::function<bool(uint32_t rank)> kept;
  };
  const std::vector<Case> cases = {
      {"host=node-3,node-100", [](uint32_t r) { return r / 8 == 3 || r / 8 == 100; }},
      {"rack=rack-2", [](uint32_t r) { return r / 128 == 2; }},
      {"x=4-11", [](uint32_t r) { return r % 32 >= 4 && r % 32 <= 11; }},
      {"rack=rack-0,rack-7 y=2-29",
       [](uint32_t r) { return (r / 128 == 0 || r / 128 == 7) && r / 32 >= 2 && r / 32 <= 29; }},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(ring.SetFilterText(c.text).ok()) << c.text;
    const std::vector<size_t> shown = ring.ring_order();
    size_t expected = 0;
    for (uint32_t r = 0; r < 1024; ++r) {
      const bool kept = c.kept(r);
      expected += kept;
      EXPECT_EQ(ring.PositionOf(*m.IndexOf(r)).has_value(), kept) << c.text << ": rank " << r;
    }
    EXPECT_EQ(shown.size(), expected) << c.text;
    EXPECT_TRUE(IsSubsequence(shown, whole)) << c.text;
    // No edge touches a device filtered out.
    const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
    for (const auto& e : ring.edges()) {
      EXPECT_TRUE(c.kept(m.devices[units[e.a].devices[0]].rank)) << c.text;
      EXPECT_TRUE(c.kept(m.devices[units[e.b].devices[0]].rank)) << c.text;
    }
  }
  // Nothing passes: said so, not an empty picture.
  ASSERT_TRUE(ring.SetFilterText("rack=rack-0 y=31").ok());
  EXPECT_TRUE(ring.ring_order().empty());
  bool said = false;
  for (const Text& t : ring.Draw().texts) said = said || t.text == "no device passes the filter";
  EXPECT_TRUE(said);
  ASSERT_TRUE(ring.SetFilterText("").ok());
  EXPECT_EQ(ring.ring_order(), whole);
}

TEST(HilbertRingLayoutTest, RefusesFiltersItCannotApplyAndKeepsTheOldOne) {
  ViewerState state;
  LoadMeshJob(&state);
  HilbertRingLayout& ring = state.hilbert_ring;
  ASSERT_TRUE(ring.SetFilterText("rack=rack-1").ok());
  absl::Status status = ring.SetFilterText("host=node-999");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("node-999"), std::string::npos) << status;
  status = ring.SetFilterText("rack=rack-1 z=3");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(ring.filter().ToString(), "rack=rack-1");
  EXPECT_EQ(ring.ring_order().size(), 128u);
  // Without coordinates a dimension filter has nothing to test.
  ViewerState plain;
  SyntheticJobOptions options;
  options.devices = 16;
  options.hosts = 4;
  options.straggler.reset();
  plain.Load(GenerateSyntheticJob(options));
  status = plain.hilbert_ring.SetFilterText("x=0-3");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("coordinates"), std::string::npos) << status;
}

// A click on a block of the address tracks zooms into it: its devices fill
// the ring in the whole ring's order, so neighbours stay at least as close
// (every aligned 4 x 4 mesh square is still 16 consecutive positions); the
// back-out button and BackOut return step by step.
TEST(HilbertRingLayoutTest, ClickingABlockZoomsIntoItAndBackingOutReturns) {
  ViewerState state;
  LoadMeshJob(&state);
  HilbertRingLayout& ring = state.hilbert_ring;
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const std::vector<size_t> whole = ring.ring_order();
  // The rack track's block over device rank 300 (rack-2), clicked.
  const size_t device = *m.IndexOf(300);
  const PointF mark = ring.DevicePoint(device);
  const PointF centre{500, 520};
  const float r = std::hypot(mark.x - centre.x, mark.y - centre.y);
  auto outward = [&](float by) {
    return PointF{centre.x + (mark.x - centre.x) * (r + by) / r,
                  centre.y + (mark.y - centre.y) * (r + by) / r};
  };
  // Past the mark (8 px), the host track (3 + 12 px) and the rack gap (3 px).
  const PointF rack_block = outward(8 + 3 + 12 + 3 + 6);
  EXPECT_NE(ring.TooltipAt(rack_block.x, rack_block.y).find("rack rack-2"), std::string::npos)
      << ring.TooltipAt(rack_block.x, rack_block.y);
  const uint64_t selection = state.selection.devices_version();
  EXPECT_FALSE(ring.ClickAt(rack_block.x, rack_block.y));
  EXPECT_EQ(state.selection.devices_version(), selection);  // a zoom, not a selection
  ASSERT_TRUE(ring.zoom().has_value());
  EXPECT_EQ(ring.zoom()->first, ClusterLevel::kRack);
  const std::vector<size_t> rack = ring.ring_order();
  ASSERT_EQ(rack.size(), 128u);
  for (size_t d : rack) EXPECT_EQ(m.devices[d].rank / 128, 2u);
  EXPECT_TRUE(IsSubsequence(rack, whole));
  // Any two of its devices are at most as far apart as on the whole ring.
  std::map<size_t, size_t> whole_position;
  for (size_t i = 0; i < whole.size(); ++i) whole_position[whole[i]] = i;
  for (size_t i = 0; i < rack.size(); ++i)
    for (size_t j = i + 1; j < rack.size(); ++j)
      ASSERT_LE(j - i, whole_position[rack[j]] - whole_position[rack[i]]);
  ExpectMeshSquaresConsecutive(&state, 8, 12);  // rack-2's rows
  // Now a host block inside it: 8 devices.
  const PointF host_mark = ring.DevicePoint(device);
  const float hr = std::hypot(host_mark.x - centre.x, host_mark.y - centre.y);
  const PointF host_block{centre.x + (host_mark.x - centre.x) * (hr + 8 + 3 + 6) / hr,
                          centre.y + (host_mark.y - centre.y) * (hr + 8 + 3 + 6) / hr};
  ring.ClickAt(host_block.x, host_block.y);
  ASSERT_EQ(ring.zoom()->first, ClusterLevel::kHost);
  EXPECT_EQ(ring.ring_order().size(), 8u);
  EXPECT_TRUE(IsSubsequence(ring.ring_order(), rack));
  // The back-out button (top left) returns to the rack, BackOut to all.
  ring.ClickAt(20, 32);
  EXPECT_EQ(ring.ring_order(), rack);
  EXPECT_TRUE(ring.BackOut());
  EXPECT_EQ(ring.ring_order(), whole);
  EXPECT_FALSE(ring.BackOut());
  // A zoom into a rack the hierarchy no longer has is forgotten.
  ring.ZoomInto({ClusterLevel::kRack, 7});
  EXPECT_EQ(ring.ring_order().size(), 128u);
  std::map<std::string, std::string> one_rack;
  for (int host = 0; host < 128; ++host) one_rack["node-" + std::to_string(host)] = "all";
  state.hierarchy.SetRacks(one_rack);
  EXPECT_EQ(ring.ring_order().size(), 1024u);
  EXPECT_FALSE(ring.zoom().has_value());
}

}  // namespace
}  // namespace trainscope::viewer

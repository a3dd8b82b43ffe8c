#include "trainscope/viewer/chord_layout.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

ViewerState* LoadSlowLinkJob(ViewerState* state) {
  SyntheticJobOptions options;
  options.devices = 16;
  options.hosts = 4;
  options.racks = 2;
  options.steps = 5;
  options.straggler.reset();
  options.slow_link = std::make_pair(5u, 6u);
  state->Load(GenerateSyntheticJob(options));
  return state;
}

TEST(ChordLayoutTest, ArcsAndRibbonsSumToTheTrafficAtEveryLevel) {
  ViewerState state;
  LoadSlowLinkJob(&state);
  ChordLayout& chord = state.chord;
  chord.SetViewport(1000, 900);
  for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost, ClusterLevel::kRack}) {
    chord.SetLevel(level);
    const auto cells = state.hierarchy.Aggregate(level);
    const size_t k = state.hierarchy.units(level).size();
    double between = 0;
    for (size_t u = 0; u < k; ++u)
      for (size_t v = 0; v < k; ++v)
        if (u != v) between += static_cast<double>(cells[u * k + v].duration_ns);
    ASSERT_GT(between, 0) << ClusterLevelName(level);
    const double scale = chord.scale();
    double out = 0, in = 0, angles = 0;
    for (const auto& arc : chord.arcs()) {
      EXPECT_NEAR(arc.out_end - arc.out_start, arc.out * scale, 1e-9);
      EXPECT_NEAR(arc.in_end - arc.in_start, arc.in * scale, 1e-9);
      EXPECT_NEAR(arc.self, static_cast<double>(cells[arc.unit * k + arc.unit].duration_ns), 1e-6);
      out += arc.out;
      in += arc.in;
      angles += arc.in_end - arc.out_start;
    }
    EXPECT_NEAR(out, between, 1e-6);
    EXPECT_NEAR(in, between, 1e-6);
    EXPECT_LT(angles, 2 * kPi);
    EXPECT_GT(angles, 2 * kPi * 0.8);
    // Each arc's ribbons tile its out and in intervals exactly.
    std::vector<double> out_span(k, 0), in_span(k, 0);
    for (const auto& r : chord.ribbons()) {
      EXPECT_NEAR(r.value, static_cast<double>(cells[r.src * k + r.dst].duration_ns), 1e-6);
      EXPECT_GE(r.src_start, chord.arcs()[r.src].out_start - 1e-9);
      EXPECT_LE(r.src_end, chord.arcs()[r.src].out_end + 1e-9);
      EXPECT_GE(r.dst_start, chord.arcs()[r.dst].in_start - 1e-9);
      EXPECT_LE(r.dst_end, chord.arcs()[r.dst].in_end + 1e-9);
      out_span[r.src] += r.src_end - r.src_start;
      in_span[r.dst] += r.dst_end - r.dst_start;
    }
    for (size_t u = 0; u < k; ++u) {
      EXPECT_NEAR(out_span[u], chord.arcs()[u].out * scale, 1e-9);
      EXPECT_NEAR(in_span[u], chord.arcs()[u].in * scale, 1e-9);
    }
  }
}

TEST(ChordLayoutTest, TheSlowLinkIsTheWidestRibbonAndSelfTrafficThickensArcs) {
  ViewerState state;
  LoadSlowLinkJob(&state);
  ChordLayout& chord = state.chord;
  chord.SetViewport(1000, 900);
  chord.SetLevel(ClusterLevel::kDevice);
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  const auto& front = chord.ribbons().front();
  EXPECT_EQ(units[front.src].name, "rank 5");
  EXPECT_EQ(units[front.dst].name, "rank 6");
  EXPECT_GT(front.value, 4 * chord.ribbons()[1].value);
  // Hovering the middle of its source end names it; clicking selects it.
  const double mid = (front.src_start + front.src_end) / 2;
  const PointF p = OnCircle(chord.centre(), chord.radius() - 4, mid);
  EXPECT_NE(chord.TooltipAt(p.x, p.y).find("rank 5 -> rank 6"), std::string::npos)
      << chord.TooltipAt(p.x, p.y);
  EXPECT_TRUE(chord.ClickAt(p.x, p.y));
  EXPECT_EQ(state.selection.selected_link(), std::make_pair(5u, 6u));
  // At the host level, node-1 (ranks 4-7) holds the slow link inside it:
  // the thickest arc.
  chord.SetLevel(ClusterLevel::kHost);
  const auto& arcs = chord.arcs();
  size_t thickest = 0;
  for (size_t u = 0; u < arcs.size(); ++u)
    if (arcs[u].thickness > arcs[thickest].thickness) thickest = u;
  EXPECT_EQ(state.hierarchy.units(ClusterLevel::kHost)[thickest].name, "node-1");
}

// Every setter re-lays the view out when its value changes (ClusterView::
// SetField), and the result follows the new value.
TEST(ChordLayoutTest, EachSetterRelaysOutOnAChange) {
  ViewerState state;
  LoadSlowLinkJob(&state);
  ChordLayout& chord = state.chord;
  chord.SetViewport(1000, 900);
  chord.SetLevel(ClusterLevel::kHost);
  EXPECT_EQ(chord.arcs().size(), 4u);
  chord.SetLevel(ClusterLevel::kDevice);
  EXPECT_EQ(chord.arcs().size(), 16u);
  const float radius = chord.radius();
  chord.SetViewport(500, 450);
  EXPECT_LT(chord.radius(), radius * 0.6f);
  const double by_time = chord.scale();
  chord.SetMeasure(ChordLayout::Measure::kBytes);
  EXPECT_NE(chord.scale(), by_time);
  chord.SetMeasure(ChordLayout::Measure::kBytes);  // the same: nothing to redo
  chord.SetMeasure(ChordLayout::Measure::kTransferTime);
  EXPECT_DOUBLE_EQ(chord.scale(), by_time);
}

// 1,024 devices on 128 hosts: the arcs keep most of the circle (the gaps
// between 128 hosts once took more than all of it), the thousand
// pixel-wide ribbons are drawn as one bundle per host pair (what is painted
// is bounded), the slow link alone; no ribbon is lost.
TEST(ChordLayoutTest, AThousandDevicesKeepTheirArcsAndBundleThinRibbons) {
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
  ChordLayout& chord = state.chord;
  chord.SetViewport(1920, 1080);
  chord.SetLevel(ClusterLevel::kDevice);
  ASSERT_GT(chord.scale(), 0);
  double angles = 0;
  for (const auto& arc : chord.arcs()) {
    EXPECT_GE(arc.out_end, arc.out_start);
    EXPECT_GE(arc.in_end, arc.in_start);
    angles += arc.in_end - arc.out_start;
  }
  EXPECT_GT(angles, 2 * kPi * 0.7);
  EXPECT_LT(angles, 2 * kPi);
  EXPECT_GE(chord.arcs().back().in_end, chord.arcs().back().in_start);
  EXPECT_LT(chord.arcs().back().in_end, 2 * kPi);
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  const auto& ribbons = chord.ribbons();
  ASSERT_EQ(ribbons.size(), 1024u);
  EXPECT_EQ(units[ribbons.front().src].name, "rank 12");
  EXPECT_FALSE(ribbons.front().polygon.empty());
  const auto& bundles = chord.bundles();
  ASSERT_FALSE(bundles.empty());
  EXPECT_LE(bundles.size(), 2u * 128u);
  std::vector<double> value(bundles.size(), 0);
  std::vector<size_t> flows(bundles.size(), 0);
  for (const auto& r : ribbons) {
    if (r.bundle == SIZE_MAX) {
      EXPECT_FALSE(r.polygon.empty());
      continue;
    }
    ASSERT_LT(r.bundle, bundles.size());
    const auto& b = bundles[r.bundle];
    EXPECT_TRUE(r.polygon.empty());
    EXPECT_EQ(units[r.src].parent, b.src_parent);
    EXPECT_EQ(units[r.dst].parent, b.dst_parent);
    EXPECT_GE(r.src_start, b.src_start - 1e-12);
    EXPECT_LE(r.src_end, b.src_end + 1e-12);
    EXPECT_GE(r.dst_start, b.dst_start - 1e-12);
    EXPECT_LE(r.dst_end, b.dst_end + 1e-12);
    value[r.bundle] += r.value;
    flows[r.bundle] += 1;
  }
  for (size_t i = 0; i < bundles.size(); ++i) {
    EXPECT_NEAR(bundles[i].value, value[i], 1e-6 * value[i]);
    EXPECT_EQ(bundles[i].flows, flows[i]);
    EXPECT_FALSE(bundles[i].polygon.empty());
  }
  // Painted: a few hundred polygons, the 2,048 arc halves as plain quads.
  const DrawList& list = chord.Draw();
  EXPECT_LT(list.polygons.size(), 600u);
  EXPECT_GE(list.quads.size(), 2000u);
}

}  // namespace
}  // namespace trainscope::viewer

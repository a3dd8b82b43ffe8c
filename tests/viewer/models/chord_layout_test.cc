#include "trainscope/viewer/chord_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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

PairTrafficRecord Pair(uint32_t src, uint32_t dst, int64_t ns) {
  PairTrafficRecord t;
  t.src_rank = src;
  t.dst_rank = dst;
  t.bytes = static_cast<uint64_t>(ns) * 10;
  t.duration_ns = ns;
  t.messages = 1;
  return t;
}

// Four hosts of one device each, a and b in rack r0, c and d in r1.
struct HandMadeJob {
  TrafficModel traffic;
  ClusterHierarchy hierarchy{&traffic};
  SelectionState selection;
  ChordLayout chord{&hierarchy, &selection};

  explicit HandMadeJob(const std::vector<std::vector<PairTrafficRecord>>& steps) {
    traffic.SetDevices({{0, 0, "a"}, {1, 0, "b"}, {2, 0, "c"}, {3, 0, "d"}});
    hierarchy.SetRacks({{"a", "r0"}, {"b", "r0"}, {"c", "r1"}, {"d", "r1"}});
    for (size_t i = 0; i < steps.size(); ++i) {
      StepRecord step;
      step.step = i + 1;
      step.traffic = steps[i];
      traffic.AddStep(step);
    }
    chord.SetViewport(900, 900);
  }
  uint64_t Crossings(bool reduce) {
    chord.SetCrossingReduction(reduce);
    return chord.crossings();
  }
};

// a -> c and b -> d cross in the plain order (a b c d); a and b swapping
// within their rack uncrosses them. Racks stay whole.
TEST(ChordLayoutTest, TheOrderUncrossesWhatTheHierarchyOrderCrosses) {
  HandMadeJob job({{Pair(0, 2, 100), Pair(1, 3, 100)}});
  for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost}) {
    job.chord.SetLevel(level);
    EXPECT_EQ(job.Crossings(false), 1u) << ClusterLevelName(level);
    EXPECT_EQ(job.chord.order(), (std::vector<size_t>{0, 1, 2, 3}));
    EXPECT_EQ(job.Crossings(true), 0u) << ClusterLevelName(level);
    const std::vector<size_t> order = job.chord.order();
    const auto& units = job.hierarchy.units(level);
    auto rack = [&](size_t u) {
      return job.hierarchy.UnitOf(ClusterLevel::kRack, units[u].devices[0]);
    };
    EXPECT_EQ(rack(order[0]), rack(order[1]));
    EXPECT_EQ(rack(order[2]), rack(order[3]));
    // The arcs follow the order around the circle.
    for (size_t i = 1; i < order.size(); ++i)
      EXPECT_GT(job.chord.arcs()[order[i]].out_start, job.chord.arcs()[order[i - 1]].in_end);
  }
}

// Jobs whose plain order is already good, or as good as it gets: the order
// found never crosses more.
TEST(ChordLayoutTest, TheOrderNeverCrossesMoreThanTheHierarchyOrder) {
  const std::vector<std::vector<PairTrafficRecord>> cases = {
      {Pair(0, 1, 5), Pair(1, 2, 5), Pair(2, 3, 5), Pair(3, 0, 5)},  // a ring
      {Pair(0, 3, 9), Pair(1, 2, 1)},                                // nested
      {Pair(0, 1, 1), Pair(0, 2, 2), Pair(0, 3, 3), Pair(1, 2, 4), Pair(1, 3, 5),
       Pair(2, 3, 6)},  // everyone
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    HandMadeJob job({cases[c]});
    for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost, ClusterLevel::kRack}) {
      job.chord.SetLevel(level);
      EXPECT_LE(job.Crossings(true), job.Crossings(false)) << c << " " << ClusterLevelName(level);
    }
  }
  // The synthetic jobs (a ring per all-reduce, one slow link), every level.
  for (uint32_t devices : {16u, 1024u}) {
    SyntheticJobOptions options;
    options.devices = devices;
    options.hosts = devices / 8;
    options.racks = devices == 16 ? 2 : 8;
    options.steps = 2;
    options.compute_ops_per_step = 2;
    options.collectives_per_step = 1;
    options.straggler.reset();
    options.slow_link = std::make_pair(5u, 6u);
    ViewerState state;
    state.Load(GenerateSyntheticJob(options));
    state.chord.SetViewport(1000, 900);
    for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost, ClusterLevel::kRack}) {
      state.chord.SetLevel(level);
      state.chord.SetCrossingReduction(false);
      const uint64_t plain = state.chord.crossings();
      state.chord.SetCrossingReduction(true);
      EXPECT_LE(state.chord.crossings(), plain) << devices << " " << ClusterLevelName(level);
      // Every host's devices are still one run of the circle.
      if (level != ClusterLevel::kDevice) continue;
      const auto& order = state.chord.order();
      size_t runs = 1;
      for (size_t i = 1; i < order.size(); ++i)
        runs += state.hierarchy.UnitOf(ClusterLevel::kHost, order[i]) !=
                state.hierarchy.UnitOf(ClusterLevel::kHost, order[i - 1]);
      EXPECT_EQ(runs, options.hosts);
    }
  }
}

void ExpectSameGeometry(const ChordLayout::Geometry& x, const ChordLayout::Geometry& y) {
  ASSERT_EQ(x.arcs.size(), y.arcs.size());
  for (size_t u = 0; u < x.arcs.size(); ++u) {
    EXPECT_EQ(x.arcs[u].out_start, y.arcs[u].out_start);
    EXPECT_EQ(x.arcs[u].in_end, y.arcs[u].in_end);
    EXPECT_EQ(x.arcs[u].out, y.arcs[u].out);
    EXPECT_EQ(x.arcs[u].in, y.arcs[u].in);
    EXPECT_EQ(x.arcs[u].thickness, y.arcs[u].thickness);
  }
  std::map<std::pair<size_t, size_t>, const ChordLayout::Ribbon*> by_pair;
  for (const auto& r : y.ribbons) by_pair[{r.src, r.dst}] = &r;
  ASSERT_EQ(x.ribbons.size(), y.ribbons.size());
  for (const auto& r : x.ribbons) {
    ASSERT_EQ(by_pair.count({r.src, r.dst}), 1u) << r.src << "->" << r.dst;
    const auto& o = *by_pair[{r.src, r.dst}];
    EXPECT_EQ(r.value, o.value);
    EXPECT_EQ(r.src_start, o.src_start);
    EXPECT_EQ(r.dst_end, o.dst_end);
  }
}

// Two frames with different links (b -> c only in the first, c -> d only in
// the second): t = 0 and 1 are the frames themselves, and at every t between
// each arc's ribbons fill it exactly and the values are the frames' mix.
TEST(ChordLayoutTest, InterpolationKeepsEveryArcFilledByItsRibbons) {
  HandMadeJob job({{Pair(0, 1, 100), Pair(1, 2, 300), Pair(3, 0, 50)},
                   {Pair(0, 1, 400), Pair(2, 3, 200), Pair(3, 0, 50)}});
  job.chord.SetLevel(ClusterLevel::kHost);
  job.traffic.SetStepRange(1, 1);
  const ChordLayout::Geometry a = job.chord.target();
  job.traffic.SetStepRange(2, 2);
  const ChordLayout::Geometry b = job.chord.target();
  ASSERT_EQ(a.ribbons.size(), 3u);
  ASSERT_EQ(b.ribbons.size(), 3u);
  ExpectSameGeometry(ChordLayout::Interpolate(a, b, 0), a);
  ExpectSameGeometry(ChordLayout::Interpolate(a, b, 1), b);
  for (double t : {0.1, 0.5, 0.8}) {
    const ChordLayout::Geometry g = ChordLayout::Interpolate(a, b, t);
    EXPECT_EQ(g.ribbons.size(), 4u) << t;  // the union: one grows, one fades
    std::vector<double> out_span(4, 0), in_span(4, 0), out_value(4, 0), in_value(4, 0);
    for (const auto& r : g.ribbons) {
      EXPECT_GE(r.src_end, r.src_start);
      out_span[r.src] += r.src_end - r.src_start;
      in_span[r.dst] += r.dst_end - r.dst_start;
      out_value[r.src] += r.value;
      in_value[r.dst] += r.value;
    }
    for (size_t u = 0; u < 4; ++u) {
      const auto& arc = g.arcs[u];
      EXPECT_NEAR(out_span[u], arc.out_end - arc.out_start, 1e-9) << t << " unit " << u;
      EXPECT_NEAR(in_span[u], arc.in_end - arc.in_start, 1e-9) << t << " unit " << u;
      EXPECT_NEAR(out_value[u], arc.out, 1e-6) << t << " unit " << u;
      EXPECT_NEAR(in_value[u], arc.in, 1e-6) << t << " unit " << u;
      EXPECT_NEAR(arc.out, a.arcs[u].out + (b.arcs[u].out - a.arcs[u].out) * t, 1e-6);
      EXPECT_LE(arc.in_end, 2 * kPi);
    }
  }
  // The layout counts the new frame as a transition and shows any t of it.
  const uint64_t transitions = job.chord.transitions();
  job.traffic.SetStepRange(1, 1);
  EXPECT_EQ(job.chord.transitions(), transitions + 1);
  job.chord.SetTransition(0);
  EXPECT_EQ(job.chord.arcs()[2].out, b.arcs[2].out);  // still the second frame
  job.chord.SetTransition(0.5);
  EXPECT_NEAR(job.chord.arcs()[2].out, (a.arcs[2].out + b.arcs[2].out) / 2, 1e-6);
  EXPECT_EQ(job.chord.ribbons().size(), 4u);
  job.chord.SetTransition(1);
  EXPECT_EQ(job.chord.arcs()[2].out, a.arcs[2].out);
  EXPECT_EQ(job.chord.ribbons().size(), 3u);
  // Other units (a new level): no transition.
  job.chord.SetLevel(ClusterLevel::kRack);
  EXPECT_EQ(job.chord.transitions(), transitions + 1);
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/marey_line_charts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace trainscope::viewer {
namespace {

// `count` steps of 1 ms, one device (rank 0) with FLOPs and memory that
// alternate low and high.
std::map<uint64_t, StepRecord> Steps(uint64_t count) {
  std::map<uint64_t, StepRecord> steps;
  for (uint64_t s = 0; s < count; ++s) {
    const int64_t start = static_cast<int64_t>(s) * 1'000'000;
    StepRecord step{s, start, start + 1'000'000, {}};
    DeviceStepRecord d;
    d.rank = 0;
    d.start_ns = start;
    d.end_ns = start + 1'000'000;
    d.flops = s % 2 ? 100 : 300;
    d.peak_memory_bytes = 1000 + s % 7;
    step.devices.push_back(d);
    steps[s] = step;
  }
  return steps;
}

MareyView View(uint64_t steps) {
  MareyView view;
  view.Resize(1000, 600);
  view.start = 0;
  view.end = static_cast<int64_t>(steps) * 1'000'000;
  return view;
}

TEST(MareyLineChartsTest, ZoomedInEachStepIsALevelAtItsValue) {
  const auto steps = Steps(10);
  const MareyView view = View(10);
  const MareyLineCharts charts(view, steps);
  EXPECT_FALSE(charts.aggregated());
  DrawList list;
  charts.Add(0, 0, 300, 100, &list);
  ASSERT_EQ(list.polylines.size(), 2u);
  const Polyline& flops = list.polylines[0];
  EXPECT_EQ(flops.color, MareyLineCharts::kFlopsColor);
  EXPECT_FLOAT_EQ(flops.width, MareyLineCharts::kLineWidth);
  EXPECT_TRUE(list.polylines[1].dashed);  // memory
  // A level per step: at most two points each (neighbours share an edge),
  // between the low and the high FLOPs.
  EXPECT_GE(flops.points.size(), 10u);
  EXPECT_LE(flops.points.size(), 20u);
  float top = 1e9f, bottom = -1e9f;
  for (const PointF& p : flops.points) {
    top = std::min(top, p.y);
    bottom = std::max(bottom, p.y);
  }
  EXPECT_FLOAT_EQ(top, 300 - 100);
  EXPECT_FLOAT_EQ(bottom, 300 - 100 * 0.15f);
  // Another rank has no values: no lines.
  DrawList other;
  charts.Add(1, 0, 300, 100, &other);
  EXPECT_TRUE(other.polylines.empty());
}

// Issue 23: a whole run drew two antialiased points per step through a
// 1.3 px pen, most of the frame. Aggregated, a chart holds at most one point
// per pixel column, whatever the step count: FLOPs at the column's mean,
// memory at its peak.
TEST(MareyLineChartsTest, AWholeRunIsOnePointPerPixelColumn) {
  for (uint64_t count : {5'000u, 50'000u}) {
    const auto steps = Steps(count);
    const MareyView view = View(count);
    const MareyLineCharts charts(view, steps);
    ASSERT_TRUE(charts.aggregated());
    DrawList list;
    charts.Add(0, 0, 300, 100, &list);
    ASSERT_EQ(list.polylines.size(), 2u);
    for (const Polyline& line : list.polylines) {
      EXPECT_LE(line.points.size(), static_cast<size_t>(view.plot.w) + 1) << count;
      EXPECT_GE(line.points.size(), static_cast<size_t>(view.plot.w) - 2) << count;
      EXPECT_FLOAT_EQ(line.width, MareyLineCharts::kAggregatedWidth);
      for (size_t i = 1; i < line.points.size(); ++i) {
        EXPECT_GE(line.points[i].x - line.points[i - 1].x, 1.0f);
      }
    }
    // FLOPs alternate 100 and 300: each column (six steps or more) sits near
    // the middle, not at either end.
    for (const PointF& p : list.polylines[0].points) {
      EXPECT_GE(p.y, 300 - 100 * (0.15f + 0.85f * 0.6f)) << count;
      EXPECT_LE(p.y, 300 - 100 * (0.15f + 0.85f * 0.4f)) << count;
    }
    // Memory cycles over seven values: each column's peak is one of the two
    // highest.
    for (const PointF& p : list.polylines[1].points) {
      EXPECT_LE(p.y, 300 - 100 * (0.15f + 0.85f * 5 / 6) + 0.01f) << count;
    }
  }
}

}  // namespace
}  // namespace trainscope::viewer

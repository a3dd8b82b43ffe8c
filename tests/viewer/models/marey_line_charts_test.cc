#include "trainscope/viewer/marey_line_charts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

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

// The aggregated charts against a plain reference, column by column: four
// ranks whose steps start at their own offsets and whose values vary
// irregularly. Every column that holds a step has a point; the memory line
// keeps each column's peak (the highest value of any step touching the
// column, so a one-step spike is never averaged away) and the FLOPs line
// its mean. Catches a reduction that drops or shifts columns or loses an
// extreme.
TEST(MareyLineChartsTest, AggregatedColumnsKeepEachColumnsPeakAndMean) {
  constexpr uint64_t kSteps = 7'000;
  constexpr uint32_t kRanks = 4;
  std::map<uint64_t, StepRecord> steps;
  uint64_t seed = 3;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (uint64_t s = 0; s < kSteps; ++s) {
    const int64_t start = static_cast<int64_t>(s) * 1'000'000;
    StepRecord step{s, start, start + 1'000'000, {}};
    for (uint32_t r = 0; r < kRanks; ++r) {
      DeviceStepRecord d;
      d.rank = r;
      d.start_ns = start + r * 50'000;
      d.end_ns = start + 900'000 + static_cast<int64_t>(next() % 100'000);
      d.flops = 1000 + next() % 500;
      // Rare spikes: a column's peak must show them.
      d.peak_memory_bytes = next() % 97 == 0 ? 9000 : 2000 + next() % 100;
      step.devices.push_back(d);
    }
    steps[s] = step;
  }
  const MareyView view = View(kSteps);
  const MareyLineCharts charts(view, steps);
  ASSERT_TRUE(charts.aggregated());
  double min_flops = 1e300, max_flops = 0, min_memory = 1e300, max_memory = 0;
  for (const auto& [n, step] : steps) {
    for (const DeviceStepRecord& d : step.devices) {
      min_flops = std::min(min_flops, static_cast<double>(d.flops));
      max_flops = std::max(max_flops, static_cast<double>(d.flops));
      min_memory = std::min(min_memory, static_cast<double>(d.peak_memory_bytes));
      max_memory = std::max(max_memory, static_cast<double>(d.peak_memory_bytes));
    }
  }
  const float base = 300, span = 100;
  auto y_of = [&](double v, double low, double high) {
    return base - span * static_cast<float>(0.15 + 0.85 * (v - low) / (high - low));
  };
  const size_t width = static_cast<size_t>(std::ceil(view.plot.w));
  for (uint32_t r = 0; r < kRanks; ++r) {
    // The reference: each step counts in every column its span touches.
    std::vector<double> sum(width, 0);
    std::vector<int> count(width, 0);
    std::vector<float> top(width, 1e30f);
    for (const auto& [n, step] : steps) {
      const DeviceStepRecord& d = step.devices[r];
      auto column = [&](int64_t t) {
        const float x = std::clamp(view.TimeToX(t), view.plot.x, view.plot.x + view.plot.w);
        return std::min(static_cast<size_t>(std::max(0.0f, x - view.plot.x)), width - 1);
      };
      for (size_t c = column(d.start_ns); c <= column(d.end_ns); ++c) {
        sum[c] += y_of(static_cast<double>(d.flops), min_flops, max_flops);
        ++count[c];
        top[c] = std::min(top[c],
                          y_of(static_cast<double>(d.peak_memory_bytes), min_memory, max_memory));
      }
    }
    DrawList list;
    charts.Add(r, 0, base, span, &list);
    ASSERT_EQ(list.polylines.size(), 2u);
    const Polyline& flops = list.polylines[0];
    const Polyline& memory = list.polylines[1];
    size_t i = 0;
    for (size_t c = 0; c < width; ++c) {
      if (count[c] == 0) continue;
      ASSERT_LT(i, flops.points.size()) << "rank " << r << " column " << c;
      ASSERT_LT(i, memory.points.size()) << "rank " << r << " column " << c;
      const float x = view.plot.x + static_cast<float>(c) + 0.5f;
      EXPECT_FLOAT_EQ(flops.points[i].x, x);
      EXPECT_FLOAT_EQ(memory.points[i].x, x);
      EXPECT_NEAR(flops.points[i].y, sum[c] / count[c], 1e-3) << "rank " << r << " column " << c;
      EXPECT_FLOAT_EQ(memory.points[i].y, top[c]) << "rank " << r << " column " << c;
      ++i;
    }
    EXPECT_EQ(flops.points.size(), i);
    EXPECT_EQ(memory.points.size(), i);
  }
  // The spikes reach the top of the chart: at least one column per rank.
  DrawList list;
  charts.Add(0, 0, base, span, &list);
  float highest = 1e30f;
  for (const PointF& p : list.polylines[1].points) highest = std::min(highest, p.y);
  EXPECT_FLOAT_EQ(highest, base - span);
}

}  // namespace
}  // namespace trainscope::viewer

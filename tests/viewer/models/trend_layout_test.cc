#include "trainscope/viewer/trend_layout.h"

#include <gtest/gtest.h>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

TEST(TrendLayoutTest, SmallMultiplesShareAColumnScaleAndMarkTheFrame) {
  SyntheticJobOptions options;
  options.devices = 8;
  options.hosts = 4;
  options.steps = 12;
  options.straggler = 5;
  options.straggler_from_step = 6;
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  TrendLayout& trend = state.trend;
  trend.SetViewport(1400, 700);
  trend.SetLevel(ClusterLevel::kHost);
  trend.SetFrameSteps(3);
  ASSERT_EQ(trend.frame_count(), 4u);  // steps 1..12 (or 0..11) in threes
  EXPECT_EQ(trend.frame(), 3u);        // the newest by default
  trend.SetFrame(1);
  EXPECT_EQ(trend.frame(), 1u);
  trend.SetFrame(99);
  EXPECT_EQ(trend.frame(), 3u);  // clamped
  ASSERT_EQ(trend.rows().size(), 4u);
  // Each value point is inside its cell; a column spans its smallest value
  // (the cell's bottom) to its largest (the top); a constant one sits midway.
  for (int k = 0; k < UnitTrendModel::kMetricCount; ++k) {
    float top = 1e9f, bottom = -1e9f;
    double lo = 1e300, hi = -1e300;
    for (size_t r = 0; r < trend.rows().size(); ++r) {
      const RectF cell = trend.CellRect(r, k);
      for (size_t f = 0; f < trend.frame_count(); ++f) {
        const PointF p = trend.ValuePoint(r, k, f);
        EXPECT_GE(p.y, cell.y - 0.01f);
        EXPECT_LE(p.y, cell.y + cell.h + 0.01f);
        top = std::min(top, p.y - cell.y);
        bottom = std::max(bottom, p.y - cell.y);
        lo = std::min(lo, trend.series().at(trend.rows()[r].unit, k, f));
        hi = std::max(hi, trend.series().at(trend.rows()[r].unit, k, f));
      }
    }
    const float h = trend.CellRect(0, k).h;
    const char* name = UnitTrendModel::MetricName(static_cast<UnitTrendModel::Metric>(k));
    if (hi > lo) {
      EXPECT_NEAR(top, 0, 0.01) << name;
      EXPECT_NEAR(bottom, h, 0.01) << name;
    } else {
      EXPECT_NEAR(top, h / 2, 0.01) << name;
    }
  }
  // The straggler's host (node-2: ranks 4, 5) has the longest step time from
  // frame 2 on... every host waits for it, but its compute stands out.
  const auto& s = trend.series();
  size_t busiest = 0;
  for (size_t u = 0; u < s.units; ++u)
    if (s.at(u, UnitTrendModel::kCompute, 3) > s.at(busiest, UnitTrendModel::kCompute, 3))
      busiest = u;
  EXPECT_EQ(state.hierarchy.units(ClusterLevel::kHost)[busiest].name, "node-2");
  // A click on a row selects that host's devices.
  const RectF row = trend.rows()[busiest].rect;
  EXPECT_TRUE(trend.ClickAt(row.x + 20, row.y + row.h / 2));
  EXPECT_EQ(state.selection.selected_ranks(), (std::set<uint32_t>{4, 5}));
  EXPECT_TRUE(trend.rows()[busiest].selected);
}

TEST(TrendLayoutTest, ManyUnitsKeepTheSlowestRows) {
  SyntheticJobOptions options;
  options.devices = 256;
  options.hosts = 32;
  options.steps = 3;
  options.compute_ops_per_step = 4;
  options.collectives_per_step = 1;
  options.straggler = 200;
  options.straggler_from_step = 0;
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  TrendLayout& trend = state.trend;
  trend.SetViewport(1200, 500);
  trend.SetLevel(ClusterLevel::kDevice);
  const auto& rows = trend.rows();
  ASSERT_LT(rows.size(), 256u);
  ASSERT_GT(rows.size(), 5u);
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  bool straggler = false;
  for (const auto& r : rows) straggler = straggler || units[r.unit].name == "rank 200";
  EXPECT_TRUE(straggler);
}

}  // namespace
}  // namespace trainscope::viewer

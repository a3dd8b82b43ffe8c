#include "trainscope/viewer/overview_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "overview_test_steps.h"

namespace trainscope::viewer {
namespace {

TEST(OverviewModelTest, ClickSelectsNearestStep) {
  OverviewModel overview;
  for (uint64_t s = 10; s <= 20; ++s) overview.AddStep(MakeStep(s, 2));
  overview.SetViewport(1000, 600);
  overview.Draw();
  const RectF chart = overview.chart_rect();
  EXPECT_EQ(overview.StepAt(chart.x, chart.y + 10), 10u);
  EXPECT_EQ(overview.StepAt(chart.x + chart.w, chart.y + 10), 20u);
  EXPECT_EQ(overview.StepAt(chart.x + chart.w * 0.52f, chart.y + 10), 15u);
  EXPECT_FALSE(overview.StepAt(chart.x, chart.y + chart.h + 200).has_value());
}

// Red marks straddling the step axis at the steps given, none elsewhere.
std::vector<float> AlertMarkXs(OverviewModel* overview) {
  std::vector<float> xs;
  const RectF chart = overview->chart_rect();
  for (const Line& line : overview->Draw().lines) {
    if (line.color == kAlertColor && line.a.x == line.b.x && line.a.y < chart.y + chart.h &&
        line.b.y > chart.y + chart.h) {
      xs.push_back(line.a.x);
    }
  }
  return xs;
}

TEST(OverviewModelTest, AlertStepsAreMarkedOnTheStepAxis) {
  OverviewModel overview;
  for (uint64_t s = 10; s <= 20; ++s) overview.AddStep(MakeStep(s, 2));
  overview.SetViewport(1000, 600);
  overview.Draw();
  EXPECT_TRUE(AlertMarkXs(&overview).empty());
  overview.SetAlertSteps({5, 15, 20});  // step 5 is not in the chart
  const std::vector<float> xs = AlertMarkXs(&overview);
  const RectF chart = overview.chart_rect();
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_NEAR(xs[0], chart.x + chart.w * 0.5f, 1.0f);
  EXPECT_NEAR(xs[1], chart.x + chart.w, 1.0f);
}

TEST(OverviewModelTest, OneLinePerDeviceOrAnEnvelope) {
  OverviewModel few;
  for (uint64_t s = 1; s <= 3; ++s) few.AddStep(MakeStep(s, 4));
  // Four device lines plus the two communication lines.
  EXPECT_EQ(few.Draw().polylines.size(), 6u);
  OverviewModel many;
  for (uint64_t s = 1; s <= 3; ++s) many.AddStep(MakeStep(s, 64));
  EXPECT_EQ(many.Draw().polylines.size(), 5u);  // min, mean, max + two
}

TEST(OverviewModelTest, ADeviceWithoutItsEndMarkLeavesAHoleNotADropToZero) {
  OverviewModel overview;
  for (uint64_t s = 1; s <= 3; ++s) overview.AddStep(MakeStep(s, 4));
  // The job's last step: only rank 0 ran it; the others are listed without
  // their end mark, with the moment from their last mark to the job's end.
  StepRecord partial = MakeStep(4, 4);
  for (DeviceStepRecord& d : partial.devices) {
    if (d.rank == 0) continue;
    d = DeviceStepRecord{d.rank};
    d.step_time_ns = 20'000;
    d.complete = false;
  }
  overview.AddStep(partial);
  overview.SetViewport(1000, 600);
  size_t points = 0;
  float lowest = 0;
  for (const Polyline& line : overview.Draw().polylines) {
    points += line.points.size();
    for (const PointF& p : line.points) lowest = std::max(lowest, p.y);
  }
  // Rank 0's line has 4 points, ranks 1-3's 3 each, the two averages 4 each.
  EXPECT_EQ(points, 4u + 3 * 3u + 2 * 4u);
  const RectF chart = overview.chart_rect();
  EXPECT_LT(lowest, chart.y + chart.h - 1) << "a line drops to zero";
}

TEST(OverviewModelTest, LongRunsAreDecimatedToTheChartWidth) {
  OverviewModel overview(100'000);
  for (uint64_t s = 1; s <= 20'000; ++s) overview.AddStep(MakeStep(s, 2));
  overview.SetViewport(800, 600);
  for (const Polyline& line : overview.Draw().polylines) {
    EXPECT_LE(line.points.size(), 2 * 800u);
  }
}

TEST(OverviewModelTest, TooltipNamesTheSlowestDevice) {
  OverviewModel overview;
  overview.AddStep(MakeStep(1, 4, /*slow_rank=*/3));
  overview.AddStep(MakeStep(2, 4, /*slow_rank=*/3));
  overview.SetViewport(1000, 600);
  overview.Draw();
  const RectF chart = overview.chart_rect();
  const std::string text = overview.TooltipAt(chart.x + 1, chart.y + 5);
  EXPECT_NE(text.find("slowest: rank 3"), std::string::npos) << text;
  const auto& bar = overview.Bars().at(1);
  const std::string bar_text = overview.TooltipAt(bar.compute_rect.x + 1, bar.compute_rect.y + 1);
  EXPECT_NE(bar_text.find("rank 1"), std::string::npos) << bar_text;
  EXPECT_NE(bar_text.find("compute: 4.00 ms"), std::string::npos) << bar_text;
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/overview_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace trainscope::viewer {
namespace {

StepRecord MakeStep(uint64_t number, uint32_t devices, int64_t slow_rank = -1) {
  StepRecord step;
  step.step = number;
  step.start_ns = static_cast<int64_t>(number) * 10'000'000;
  step.end_ns = step.start_ns + 9'000'000;
  for (uint32_t r = 0; r < devices; ++r) {
    DeviceStepRecord d;
    d.rank = r;
    d.step_time_ns = static_cast<int>(r) == slow_rank ? 9'000'000 : 6'000'000;
    d.data_wait_ns = 1'000'000;
    d.forward_ns = 1'500'000;
    d.backward_ns = 2'500'000;
    d.collective_ns = 2'000'000 + r * 100'000;
    d.wait_ns = 500'000;
    step.devices.push_back(d);
  }
  return step;
}

StepRecord MakeGpuStep(uint64_t number, uint32_t devices) {
  StepRecord step = MakeStep(number, devices);
  for (DeviceStepRecord& d : step.devices) {
    d.has_gpu = true;
    d.step_time_ns = 10'000'000;
    d.gpu_busy_ns = 4'000'000;
    d.wait_ns = 1'000'000;
    d.transfer_ns = 2'000'000;
    d.comm_compute_overlap_ns = 500'000;
    d.h2d_copy_ns = 300'000;
    d.d2h_copy_ns = 200'000;
    d.gpu_idle_launch_bound_ns = 1'500'000;
    d.gpu_idle_host_sync_ns = 0;
    d.gpu_idle_data_wait_ns = 250'000;
    d.top_kernels = {
        {"sm90_gemm", OpClass::kGpuKernel, 10, 2'000'000 + d.rank, "aten::mm"},
        {"ncclDevKernel_AllReduce", OpClass::kGpuCollective, 2, 1'500'000, "nccl:all_reduce"}};
  }
  return step;
}

TEST(OverviewModelTest, GpuBarsStackDeviceTime) {
  OverviewModel overview;
  overview.AddStep(MakeGpuStep(1, 2));
  overview.SetViewport(1200, 800);
  const auto& bars = overview.Bars();
  ASSERT_EQ(bars.size(), 2u);
  for (const auto& bar : bars) {
    ASSERT_TRUE(bar.gpu);
    int64_t sum = 0;
    for (const auto& segment : bar.segments) sum += segment.ns;
    EXPECT_EQ(sum, bar.step_time_ns);
    ASSERT_EQ(bar.segments.size(), 8u);
    EXPECT_EQ(bar.segments[0].label, "GPU compute");
    EXPECT_EQ(bar.segments[0].ns, 4'000'000);
    EXPECT_EQ(bar.segments[0].color, OverviewModel::kGpuComputeColor);
    EXPECT_EQ(bar.segments[1].ns, 1'000'000);               // NCCL wait
    EXPECT_EQ(bar.segments[2].ns, 1'500'000);               // transfer not under compute
    EXPECT_EQ(bar.segments[3].ns, 500'000);                 // copies
    EXPECT_EQ(bar.segments[4].ns, 1'500'000);               // launch-bound
    EXPECT_EQ(bar.segments[6].ns, 250'000);                 // data wait
    EXPECT_EQ(bar.segments[7].ns, 10'000'000 - 8'750'000);  // the rest
    // Stacked without gaps, compute at the bottom.
    for (size_t i = 1; i < bar.segments.size(); ++i) {
      EXPECT_NEAR(bar.segments[i - 1].rect.y, bar.segments[i].rect.y + bar.segments[i].rect.h,
                  1e-3);
    }
  }
  // The GPU compute segments are painted.
  size_t green = 0;
  for (const FilledRect& r : overview.Draw().rects)
    green += r.fill == OverviewModel::kGpuComputeColor;
  EXPECT_GE(green, 2u);
  const std::string tip =
      overview.TooltipAt(bars[0].compute_rect.x + 1, bars[0].compute_rect.y + 1);
  EXPECT_NE(tip.find("NCCL wait: 1.00 ms"), std::string::npos) << tip;
}

TEST(OverviewModelTest, GpuSegmentsNeverOvershootTheStep) {
  OverviewModel overview;
  StepRecord step = MakeGpuStep(1, 1);
  step.devices[0].gpu_busy_ns = 9'000'000;
  step.devices[0].wait_ns = 3'000'000;  // busy + wait > step time
  overview.AddStep(step);
  const auto& bar = overview.Bars().at(0);
  int64_t sum = 0;
  for (const auto& segment : bar.segments) sum += segment.ns;
  EXPECT_EQ(sum, bar.step_time_ns);
  EXPECT_EQ(bar.segments[1].ns, 1'000'000);
  EXPECT_EQ(bar.segments.back().ns, 0);
}

TEST(OverviewModelTest, StepDetailListsTopKernelsOverDevices) {
  OverviewModel overview;
  overview.AddStep(MakeStep(1, 2));  // no GPU: no kernels
  overview.AddStep(MakeGpuStep(2, 2));
  overview.SetSelectedStep(1);
  EXPECT_TRUE(overview.TopKernels().empty());
  overview.SetSelectedStep(2);
  const auto& kernels = overview.TopKernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "sm90_gemm");
  EXPECT_EQ(kernels[0].count, 20u);
  EXPECT_EQ(kernels[0].total_ns, 4'000'001);
  EXPECT_EQ(kernels[0].launch_op, "aten::mm");
  EXPECT_EQ(kernels[1].op_class, OpClass::kGpuCollective);
  EXPECT_EQ(kernels[1].total_ns, 3'000'000);
  bool listed = false;
  for (const Text& text : overview.Draw().texts) {
    listed = listed || text.text.find("sm90_gemm  (aten::mm)") != std::string::npos;
  }
  EXPECT_TRUE(listed);
}

TEST(OverviewModelTest, StackedBarsSumToStepTime) {
  OverviewModel overview;
  for (uint64_t s = 1; s <= 5; ++s) overview.AddStep(MakeStep(s, 4, /*slow_rank=*/2));
  overview.SetViewport(900, 700);
  overview.SetSelectedStep(3);
  const auto& bars = overview.Bars();
  ASSERT_EQ(bars.size(), 4u);
  for (const auto& bar : bars) {
    EXPECT_EQ(bar.interval_ns + bar.compute_ns + bar.comm_ns + bar.tail_ns, bar.step_time_ns);
    EXPECT_EQ(bar.compute_ns, 4'000'000);
    const float stacked = bar.interval_rect.h + bar.compute_rect.h + bar.wait_rect.h +
                          bar.comm_rect.h + bar.tail_rect.h;
    // Heights are in the same scale for every bar: proportional to time.
    EXPECT_NEAR(stacked / bars[0].interval_rect.h,
                static_cast<double>(bar.step_time_ns) / bars[0].interval_ns, 1e-3);
    // Segments stack without gaps: data wait at the bottom, then compute,
    // comm wait, transfer, idle on top.
    EXPECT_NEAR(bar.interval_rect.y, bar.compute_rect.y + bar.compute_rect.h, 1e-3);
    EXPECT_NEAR(bar.compute_rect.y, bar.wait_rect.y + bar.wait_rect.h, 1e-3);
    EXPECT_NEAR(bar.wait_rect.y, bar.comm_rect.y + bar.comm_rect.h, 1e-3);
    EXPECT_NEAR(bar.comm_rect.y, bar.tail_rect.y + bar.tail_rect.h, 1e-3);
    EXPECT_EQ(bar.wait_ns, 500'000);
    EXPECT_EQ(bar.segments.size(), 5u);
  }
  // The straggler: 9 ms = 1 data wait + 4 compute + 0.5 wait + 1.7 transfer
  // + 1.8 idle; the others' transfer is cut to what their 6 ms leave.
  EXPECT_EQ(bars[2].tail_ns, 1'800'000);
  EXPECT_EQ(bars[2].comm_ns, 2'200'000);
  EXPECT_EQ(bars[0].comm_ns, 1'000'000);
  EXPECT_EQ(bars[0].tail_ns, 0);
}

TEST(OverviewModelTest, ComputeIsTheMeasuredComputeNotTheWholeStep) {
  OverviewModel overview;
  StepRecord step = MakeStep(102, 1);
  // trainscope steps for the rank 0: 88 ms, 34.5 ms compute, 48.3 ms wait.
  DeviceStepRecord& d = step.devices[0];
  d.step_time_ns = 88'000'000;
  d.data_wait_ns = 1'000'000;
  d.compute_ns = 34'500'000;
  d.collective_ns = 50'000'000;
  d.wait_ns = 48'300'000;
  d.transfer_ns = 1'700'000;
  overview.AddStep(step);
  overview.SetViewport(900, 700);
  const auto& bar = overview.Bars().at(0);
  EXPECT_EQ(bar.compute_ns, 34'500'000);
  EXPECT_EQ(bar.wait_ns, 48'300'000);
  EXPECT_EQ(bar.tail_ns, 88'000'000 - 1'000'000 - 34'500'000 - 48'300'000 - 1'700'000);
  EXPECT_GT(bar.wait_rect.h, bar.compute_rect.h);
}

TEST(OverviewModelTest, TheBarsAxisDoesNotRescaleWithEveryStep) {
  OverviewModel overview;
  overview.SetViewport(900, 700);
  for (uint64_t s = 1; s <= 40; ++s) overview.AddStep(MakeStep(s, 4, s == 20 ? 2 : -1));
  overview.SetSelectedStep(10);
  const float normal = overview.Bars().at(0).compute_rect.h;
  // A slow step grows the axis (its 9 ms bar fits)...
  overview.SetSelectedStep(20);
  const float during = overview.Bars().at(0).compute_rect.h;
  EXPECT_LE(during, normal);
  // ...and the next normal steps keep that axis instead of jumping back.
  overview.SetSelectedStep(21);
  EXPECT_FLOAT_EQ(overview.Bars().at(0).compute_rect.h, during);
  overview.SetSelectedStep(22);
  EXPECT_FLOAT_EQ(overview.Bars().at(0).compute_rect.h, during);
}

TEST(OverviewModelTest, EachBarCarriesItsDevicesLineColour) {
  OverviewModel overview;
  overview.AddStep(MakeStep(1, 3));
  overview.AddStep(MakeStep(2, 3));
  overview.SetViewport(900, 700);
  const auto& bars = overview.Bars();
  std::set<Color> keys;
  for (const auto& bar : bars) {
    const float base = bar.interval_rect.y + bar.interval_rect.h;
    for (const FilledRect& r : overview.Draw().rects) {
      if (r.rect.y > base && r.rect.y < base + 6 &&
          std::fabs(r.rect.x - bar.interval_rect.x) < 0.5f) {
        keys.insert(r.fill);
      }
    }
  }
  EXPECT_EQ(keys.size(), 3u);  // one distinct colour per device
}

TEST(OverviewModelTest, SegmentsNeverOvershootTheStep) {
  OverviewModel overview;
  StepRecord step = MakeStep(1, 1);
  step.devices[0].data_wait_ns = 5'000'000;
  step.devices[0].forward_ns = 3'000'000;  // interval + f + b > step time
  overview.AddStep(step);
  const auto& bar = overview.Bars().at(0);
  EXPECT_EQ(bar.interval_ns + bar.compute_ns + bar.comm_ns + bar.tail_ns, bar.step_time_ns);
  EXPECT_EQ(bar.tail_ns, 0);
}

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

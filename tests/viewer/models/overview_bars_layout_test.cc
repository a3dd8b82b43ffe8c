#include "trainscope/viewer/overview_bars_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "overview_test_steps.h"
#include "trainscope/viewer/overview_palette.h"

namespace trainscope::viewer {
namespace {

// The bars of one step at a time, in an area like the overview's at 900 x 700.
class OverviewBarsLayoutTest : public ::testing::Test {
 protected:
  const std::vector<OverviewBarsLayout::DeviceBar>& Lay(const StepRecord& step) {
    list_ = {};
    layout_.Lay(step, {78, 376, 738, 290}, &list_);
    return layout_.bars();
  }

  OverviewBarsLayout layout_;
  DrawList list_;
};

// Linked selection: the selected devices' slots are tinted behind their
// bars (drawn first) and outlined, their labels blue even where labels thin out.
TEST_F(OverviewBarsLayoutTest, SelectedDevicesStandOut) {
  const StepRecord step = MakeStep(1, 64);
  Lay(step);
  for (const FilledRect& r : list_.rects) EXPECT_NE(r.fill, kSelectTintColor);
  layout_.SetSelectedRanks({5, 40});
  const auto& bars = Lay(step);
  ASSERT_EQ(bars.size(), 64u);
  std::vector<size_t> tinted;
  for (size_t i = 0; i < list_.rects.size(); ++i) {
    if (list_.rects[i].fill == kSelectTintColor) {
      EXPECT_EQ(list_.rects[i].stroke, kSelectColor);
      tinted.push_back(i);
    }
  }
  ASSERT_EQ(tinted.size(), 2u);
  for (const auto& bar : bars) {
    EXPECT_EQ(bar.selected, bar.rank == 5 || bar.rank == 40) << bar.rank;
    if (!bar.selected) continue;
    // Its slot holds the bar, and is painted before it.
    size_t compute = list_.rects.size();
    for (size_t j = 0; j < list_.rects.size(); ++j) {
      const RectF& r = list_.rects[j].rect;
      if (r.x == bar.compute_rect.x && r.y == bar.compute_rect.y && r.w == bar.compute_rect.w) {
        compute = j;
      }
    }
    ASSERT_LT(compute, list_.rects.size()) << bar.rank;
    bool behind = false;
    for (size_t i : tinted) {
      const RectF& slot = list_.rects[i].rect;
      behind =
          behind || (slot.x <= bar.compute_rect.x &&
                     slot.x + slot.w >= bar.compute_rect.x + bar.compute_rect.w && i < compute);
    }
    EXPECT_TRUE(behind) << bar.rank;
  }
  std::set<std::string> blue;
  for (const Text& t : list_.texts) {
    if (t.color == kSelectColor) blue.insert(t.text);
  }
  EXPECT_EQ(blue, (std::set<std::string>{"rank 5", "rank 40"}));
}

TEST_F(OverviewBarsLayoutTest, GpuBarsStackDeviceTime) {
  const auto& bars = Lay(MakeGpuStep(1, 2));
  ASSERT_EQ(bars.size(), 2u);
  for (const auto& bar : bars) {
    ASSERT_TRUE(bar.gpu);
    int64_t sum = 0;
    for (const auto& segment : bar.segments) sum += segment.ns;
    EXPECT_EQ(sum, bar.step_time_ns);
    ASSERT_EQ(bar.segments.size(), 8u);
    EXPECT_EQ(bar.segments[0].label, "GPU compute");
    EXPECT_EQ(bar.segments[0].ns, 4'000'000);
    EXPECT_EQ(bar.segments[0].color, OverviewPalette::kGpuComputeColor);
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
  for (const FilledRect& r : list_.rects) green += r.fill == OverviewPalette::kGpuComputeColor;
  EXPECT_GE(green, 2u);
  const std::string tip = layout_.TooltipAt(bars[0].compute_rect.x + 1, bars[0].compute_rect.y + 1);
  EXPECT_NE(tip.find("NCCL wait: 1.00 ms"), std::string::npos) << tip;
  EXPECT_NE(tip.find("(device time)"), std::string::npos) << tip;
  EXPECT_TRUE(layout_.TooltipAt(0, 0).empty());
}

TEST_F(OverviewBarsLayoutTest, GpuSegmentsNeverOvershootTheStep) {
  StepRecord step = MakeGpuStep(1, 1);
  step.devices[0].gpu_busy_ns = 9'000'000;
  step.devices[0].wait_ns = 3'000'000;  // busy + wait > step time
  const auto& bar = Lay(step).at(0);
  int64_t sum = 0;
  for (const auto& segment : bar.segments) sum += segment.ns;
  EXPECT_EQ(sum, bar.step_time_ns);
  EXPECT_EQ(bar.segments[1].ns, 1'000'000);
  EXPECT_EQ(bar.segments.back().ns, 0);
}

TEST_F(OverviewBarsLayoutTest, StepDetailListsTopKernelsOverDevices) {
  Lay(MakeStep(1, 2));  // no GPU: no kernels
  EXPECT_TRUE(layout_.kernels().empty());
  Lay(MakeGpuStep(2, 2));
  const auto& kernels = layout_.kernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "sm90_gemm");
  EXPECT_EQ(kernels[0].count, 20u);
  EXPECT_EQ(kernels[0].total_ns, 4'000'001);
  EXPECT_EQ(kernels[0].launch_op, "aten::mm");
  EXPECT_EQ(kernels[1].op_class, OpClass::kGpuCollective);
  EXPECT_EQ(kernels[1].total_ns, 3'000'000);
  bool listed = false;
  for (const Text& text : list_.texts) {
    listed = listed || text.text.find("sm90_gemm  (aten::mm)") != std::string::npos;
  }
  EXPECT_TRUE(listed);
  // The table takes the right part of the area: the bars keep the rest.
  EXPECT_LT(layout_.area().w, 738);
}

TEST_F(OverviewBarsLayoutTest, StackedBarsSumToStepTime) {
  const auto& bars = Lay(MakeStep(3, 4, /*slow_rank=*/2));
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

TEST_F(OverviewBarsLayoutTest, ComputeIsTheMeasuredComputeNotTheWholeStep) {
  StepRecord step = MakeStep(102, 1);
  // trainscope steps for the rank 0: 88 ms, 34.5 ms compute, 48.3 ms wait.
  DeviceStepRecord& d = step.devices[0];
  d.step_time_ns = 88'000'000;
  d.data_wait_ns = 1'000'000;
  d.compute_ns = 34'500'000;
  d.collective_ns = 50'000'000;
  d.wait_ns = 48'300'000;
  d.transfer_ns = 1'700'000;
  const auto& bar = Lay(step).at(0);
  EXPECT_EQ(bar.compute_ns, 34'500'000);
  EXPECT_EQ(bar.wait_ns, 48'300'000);
  EXPECT_EQ(bar.tail_ns, 88'000'000 - 1'000'000 - 34'500'000 - 48'300'000 - 1'700'000);
  EXPECT_GT(bar.wait_rect.h, bar.compute_rect.h);
}

TEST_F(OverviewBarsLayoutTest, TheAxisDoesNotRescaleWithEveryStep) {
  const float normal = Lay(MakeStep(10, 4)).at(0).compute_rect.h;
  // A slow step grows the axis (its 9 ms bar fits)...
  const float during = Lay(MakeStep(20, 4, /*slow_rank=*/2)).at(0).compute_rect.h;
  EXPECT_LE(during, normal);
  // ...and the next normal steps keep that axis instead of jumping back.
  EXPECT_FLOAT_EQ(Lay(MakeStep(21, 4)).at(0).compute_rect.h, during);
  EXPECT_FLOAT_EQ(Lay(MakeStep(22, 4)).at(0).compute_rect.h, during);
}

TEST_F(OverviewBarsLayoutTest, EachBarCarriesItsDevicesLineColour) {
  const auto& bars = Lay(MakeStep(2, 3));
  std::set<Color> keys;
  for (const auto& bar : bars) {
    const float base = bar.interval_rect.y + bar.interval_rect.h;
    for (const FilledRect& r : list_.rects) {
      if (r.rect.y > base && r.rect.y < base + 6 &&
          std::fabs(r.rect.x - bar.interval_rect.x) < 0.5f) {
        keys.insert(r.fill);
      }
    }
  }
  EXPECT_EQ(keys.size(), 3u);  // one distinct colour per device
  EXPECT_TRUE(keys.count(OverviewPalette::Rank(1)));
}

TEST_F(OverviewBarsLayoutTest, SegmentsNeverOvershootTheStep) {
  StepRecord step = MakeStep(1, 1);
  step.devices[0].data_wait_ns = 5'000'000;
  step.devices[0].forward_ns = 3'000'000;  // interval + f + b > step time
  const auto& bar = Lay(step).at(0);
  EXPECT_EQ(bar.interval_ns + bar.compute_ns + bar.comm_ns + bar.tail_ns, bar.step_time_ns);
  EXPECT_EQ(bar.tail_ns, 0);
}

// A small window leaves the bars a short area: the axis labels keep apart
// (fewer ticks) and the kernel table still lists a kernel.
TEST_F(OverviewBarsLayoutTest, AShortAreaKeepsItsLabelsApartAndListsAKernel) {
  // A 230 ms step: an axis to 250 ms has six labels 50 ms apart on a tall
  // area, more than a short one can hold.
  StepRecord step = MakeGpuStep(2, 2);
  for (DeviceStepRecord& d : step.devices) d.step_time_ns = 230'000'000;
  for (const float h : {50.0f, 60.0f, 90.0f, 290.0f}) {
    list_ = {};
    OverviewBarsLayout layout;
    const RectF area = {78, 376, 738, h};
    layout.Lay(step, area, &list_);
    std::vector<float> label_ys;
    bool kernel = false;
    for (const Text& text : list_.texts) {
      if (text.align == Text::Align::kRight && text.x == area.x - 6) label_ys.push_back(text.y);
      kernel = kernel || text.text.find("sm90_gemm") != std::string::npos;
    }
    ASSERT_GE(label_ys.size(), 2u) << h;
    std::sort(label_ys.begin(), label_ys.end());
    for (size_t i = 1; i < label_ys.size(); ++i) {
      EXPECT_GE(label_ys[i] - label_ys[i - 1], 14.0f) << "area " << h << " px: labels overlap";
    }
    EXPECT_TRUE(kernel) << "area " << h << " px lists no kernel";
  }
}

}  // namespace
}  // namespace trainscope::viewer

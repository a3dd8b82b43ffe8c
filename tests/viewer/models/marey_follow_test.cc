// MareyModel while a job runs: following the newest steps, the whole-run view
// and its bins, the step axis, and what clearing drops.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "trainscope/viewer/marey_model.h"

namespace trainscope::viewer {
namespace {

// `steps` 1-ms steps on `devices` devices: compute, then an all-reduce.
class MareyFollowTest : public ::testing::Test {
 protected:
  // With `values`, each device's step carries FLOPs and peak memory (the
  // line charts).
  void AddSteps(MareyModel* model, uint64_t from, uint64_t to, uint32_t devices = 2,
                bool values = false) {
    std::vector<OperatorRecord> ops;
    for (uint64_t step = from; step <= to; ++step) {
      const int64_t base = static_cast<int64_t>(step - 1) * 1'000'000;
      StepRecord record{step, base, base + 1'000'000, {}};
      for (uint32_t r = 0; r < devices; ++r) {
        OperatorRecord op;
        op.rank = r;
        op.step = step;
        op.name = names_.Intern("mm");
        op.start_ns = op.raw_start_ns = base + 10'000;
        op.end_ns = op.raw_end_ns = base + 600'000;
        ops.push_back(op);
        op.name = names_.Intern("all_reduce");
        op.op_class = OpClass::kCollective;
        op.group_sequence = step;
        op.start_ns = op.raw_start_ns = base + 650'000;
        op.end_ns = op.raw_end_ns = base + 950'000;
        ops.push_back(op);
        record.devices.push_back({r, 0, base, base + 1'000'000});
        if (values) {
          record.devices.back().flops = 1'000'000 + (step * 7919 + r * 104729) % 500'000;
          record.devices.back().peak_memory_bytes = (1ull << 30) + (step * 31 + r) % 1000 * 4096;
        }
      }
      model->AddStep(record);
    }
    model->AddOperators(ops);
  }

  NameTable names_;
};

TEST_F(MareyFollowTest, FollowingTracksTheNewestStepsAfterAZoom) {
  MareyModel model(&names_);
  model.SetViewport(1000, 600);
  AddSteps(&model, 1, 100);
  model.Draw();
  // Following by default: the newest 8 steps, not the whole run.
  EXPECT_GE(model.view_start(), 91'000'000);
  EXPECT_GE(model.view_end(), 100'000'000);
  // A zoom by hand (or an alert) stops it...
  model.SetTimeRange(40'000'000, 45'000'000);
  AddSteps(&model, 101, 120);
  model.Draw();
  EXPECT_EQ(model.view_start(), 40'000'000);
  // ...and following again moves to the newest steps, and keeps moving.
  model.FollowNewest();
  model.Draw();
  EXPECT_GE(model.view_start(), 111'000'000);
  AddSteps(&model, 121, 130);
  model.Draw();
  EXPECT_GE(model.view_start(), 121'000'000);
  EXPECT_GE(model.view_end(), 130'000'000);
  // The wheel while following shows fewer steps and still follows.
  model.ZoomAt(500, 2.0);
  AddSteps(&model, 131, 131);
  model.Draw();
  EXPECT_EQ(model.time_window().mode(), MareyTimeWindow::Mode::kFollow);
  EXPECT_EQ(model.time_window().steps(), 4u);
  EXPECT_GE(model.view_start(), 126'500'000);
  EXPECT_GE(model.view_end(), 131'000'000);
}

TEST_F(MareyFollowTest, ResetZoomGoesToAReadableRangeNotTheWholeRun) {
  MareyModel model(&names_);
  model.SetViewport(1000, 600);
  AddSteps(&model, 1, 500);
  model.ResetZoom();  // double-click: the whole run
  model.Draw();
  EXPECT_LE(model.view_start(), 0);
  model.ShowReadableRange();  // the button: the newest steps
  model.Draw();
  EXPECT_LT(model.view_end() - model.view_start(), 10'000'000);
  EXPECT_GE(model.view_end(), 500'000'000);
  // With an older step selected, around that step.
  model.SetSelectedStep(42);
  model.ShowReadableRange();
  model.Draw();
  EXPECT_LE(model.view_start(), 41'000'000);
  EXPECT_GE(model.view_end(), 42'000'000);
  EXPECT_LT(model.view_end() - model.view_start(), 10'000'000);
}

TEST_F(MareyFollowTest, TheTimeAxisNumbersTheStepsAndMarksTheirBoundaries) {
  MareyModel model(&names_);
  model.SetViewport(1000, 600);
  AddSteps(&model, 1, 100);
  model.ShowAroundStep(50, 5);
  const DrawList& list = model.Draw();
  const float bottom = model.plot_rect().y + model.plot_rect().h;
  std::set<std::string> labels;
  for (const Text& text : list.texts) {
    if (text.y > bottom && text.y < bottom + 20) labels.insert(text.text);
  }
  for (const char* step : {"48", "49", "50", "51", "52", "step"}) {
    EXPECT_TRUE(labels.count(step)) << step;
  }
  EXPECT_FALSE(labels.count("47"));
  EXPECT_EQ(model.frame_stats().steps_shown, 5u);
  // A boundary tick at the start of step 50 (49 ms).
  const float x = model.TimeToX(49'000'000);
  bool tick = false;
  for (const Line& line : list.lines) {
    tick = tick || (std::fabs(line.a.x - x) < 0.5f && line.a.y >= bottom - 0.5f);
  }
  EXPECT_TRUE(tick);
  // The whole run: labels thinned out so they never overlap.
  model.ResetZoom();
  const DrawList& whole = model.Draw();
  std::vector<float> xs;
  for (const Text& text : whole.texts) {
    if (text.y > bottom && text.y < bottom + 20 && text.text != "step") xs.push_back(text.x);
  }
  ASSERT_GE(xs.size(), 3u);
  std::sort(xs.begin(), xs.end());
  for (size_t i = 1; i < xs.size(); ++i) EXPECT_GE(xs[i] - xs[i - 1], 40.0f);
}

TEST_F(MareyFollowTest, AWholeRunAggregatesCommunicationIntoBins) {
  MareyModel model(&names_);
  model.SetViewport(1000, 600);
  AddSteps(&model, 1, 2000);
  model.ResetZoom();
  model.Draw();
  const MareyModel::FrameStats whole = model.frame_stats();
  // 2,000 collectives per row over ~100 bins: a bar per bin, not 2,000
  // bands and their joins.
  EXPECT_GE(whole.merged_comm_bins, 2 * 90u);
  EXPECT_LE(whole.merged_comm_bins, 2 * 100u);
  EXPECT_LT(whole.individual_operators, 50u);
  EXPECT_LT(model.Draw().PrimitiveCount(), 2000u);
  // Each bar is as tall as the share of time in communication (30 %).
  float band = 0, bar = 0;
  for (const FilledRect& r : model.Draw().rects) {
    if ((r.fill & 0xFFFFFF) == (kCollectiveColor & 0xFFFFFF) && r.rect.x > 300 && r.rect.x < 600) {
      bar = r.rect.h;
    }
    if ((r.fill & 0xFFFFFF) == (kMergedColor & 0xFFFFFF) && r.rect.x > 300 && r.rect.x < 600) {
      band = r.rect.h;
    }
  }
  ASSERT_GT(band, 0);
  EXPECT_NEAR(bar / band, 0.3, 0.08);
  // Zoomed to a few steps, every collective is drawn and joined again.
  model.ShowAroundStep(1000, 4);
  model.Draw();
  EXPECT_EQ(model.frame_stats().merged_comm_bins, 0u);
  EXPECT_GE(model.frame_stats().joins, 4u);
}

// Issue 23.3: a whole-run frame drew every step's line-chart points through
// a wide antialiased pen (145 ms at 1,000 steps, 393 ms at 10,000). What is
// painted must be bounded by the plot's pixels, whatever the number of
// steps: bins per row, at most one chart point per pixel column, a 1 px pen.
TEST_F(MareyFollowTest, AWholeRunFrameIsBoundedByItsWidthNotItsSteps) {
  size_t cost[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    MareyModel model(&names_);
    model.SetViewport(1000, 600);
    AddSteps(&model, 1, i == 0 ? 500 : 5000, /*devices=*/4, /*values=*/true);
    model.ResetZoom();
    const DrawList& list = model.Draw();
    const size_t width = static_cast<size_t>(model.plot_rect().w);
    EXPECT_EQ(list.polylines.size(), 8u);  // FLOPs and memory per device
    size_t points = 0;
    for (const Polyline& line : list.polylines) {
      EXPECT_LE(line.points.size(), width + 1);
      EXPECT_LE(line.width, 1.0f);
      points += line.points.size();
    }
    // Per row at most a merged band, a communication bar and a join per bin
    // (bins < pixels), plus the axes, labels and legend.
    const size_t per_bin = model.Rows().size() * model.options().bins;
    ASSERT_LT(model.options().bins, width);
    EXPECT_LE(list.quads.size(), per_bin);
    EXPECT_LE(list.rects.size(), 2 * per_bin + 40);
    EXPECT_LE(list.PrimitiveCount(), 3 * per_bin + 200);
    cost[i] = list.PrimitiveCount() + points;
  }
  // Ten times the steps: about the same frame.
  EXPECT_LE(cost[1], cost[0] + cost[0] / 5);
}

TEST_F(MareyFollowTest, ClearingDropsAStaleFocusAndSelection) {
  MareyModel model(&names_);
  model.SetViewport(1000, 600);
  AddSteps(&model, 1, 20);
  Alert alert;
  alert.step = 5;
  alert.ranks = {1};
  alert.op = "mm";
  model.FocusOnAlert(alert);
  EXPECT_EQ(model.Draw().overlay_rects.size(), 1u);
  model.ClearFocusUnlessStep(5);  // the alert's own step: kept
  EXPECT_EQ(model.Draw().overlay_rects.size(), 1u);
  model.ClearFocusUnlessStep(6);  // another step: stale
  EXPECT_TRUE(model.Draw().overlay_rects.empty());
  model.FocusOnAlert(alert);
  model.Clear();
  AddSteps(&model, 1, 20);
  EXPECT_TRUE(model.Draw().overlay_rects.empty());
  EXPECT_EQ(model.time_window().mode(), MareyTimeWindow::Mode::kFollow);
}

}  // namespace
}  // namespace trainscope::viewer

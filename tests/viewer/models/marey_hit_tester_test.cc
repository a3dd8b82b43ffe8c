// MareyHitTester answers hover and click over a frame MareyModel laid out, so
// these tests lay a frame out through the model (the Scene it hands over)
// and probe it at the pixels where the frame drew things.
#include "trainscope/viewer/marey_hit_tester.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainscope/viewer/marey_model.h"

namespace trainscope::viewer {
namespace {

using Hit = MareyHitTester::Hit;

class MareyHitTesterTest : public ::testing::Test {
 protected:
  OperatorRecord Op(uint32_t rank, int64_t start, int64_t end, const std::string& name,
                    OpClass cls = OpClass::kCompute, uint64_t step = 1) {
    OperatorRecord op;
    op.rank = rank;
    op.start_ns = start;
    op.end_ns = end;
    op.raw_start_ns = start + raw_offset_[rank % 8];
    op.raw_end_ns = end + raw_offset_[rank % 8];
    op.name = names_.Intern(name);
    op.op_class = cls;
    op.step = step;
    return op;
  }

  NameTable names_;
  int64_t raw_offset_[8] = {0, 5000, -3000, 7000, 0, 0, 0, 0};
};

TEST_F(MareyHitTesterTest, HoverNamesOperatorDeviceStartDurationStep) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "first"), Op(3, 4000, 6000, "aten::mm", OpClass::kCompute, 7)});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  const auto& rows = model.Rows();
  ASSERT_EQ(rows.size(), 2u);
  auto hit = model.HitTest(model.TimeToX(5000), rows[1].axis_y + 1);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->kind, Hit::Kind::kOperator);
  EXPECT_EQ(hit->op, "aten::mm");
  EXPECT_EQ(hit->row_label, "rank 3");
  EXPECT_EQ(hit->start_ns, 4000);
  EXPECT_EQ(hit->duration_ns, 2000);
  EXPECT_EQ(hit->step, 7u);
  EXPECT_THAT(hit->text, ::testing::HasSubstr("step: 7"));
  EXPECT_FALSE(model.HitTest(model.TimeToX(8000), rows[1].axis_y).has_value());
}

TEST_F(MareyHitTesterTest, AMergedBinCountsItsOperatorsAndTheirBusyTime) {
  MareyModel model(&names_);
  std::vector<OperatorRecord> ops;
  // 0..100 us over 100 bins of 1 us: 40 operators of 10 ns packed into bin 10.
  for (int i = 0; i < 40; ++i) ops.push_back(Op(0, 10'000 + i * 20, 10'000 + i * 20 + 10, "mm"));
  for (int64_t t : {50'000, 60'000, 70'000}) ops.push_back(Op(0, t, t + 500, "conv"));
  model.AddOperators(ops);
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 100'000);
  auto hit = model.HitTest(model.TimeToX(10'300), model.Rows()[0].axis_y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->kind, Hit::Kind::kMergedBin);
  EXPECT_EQ(hit->merged_operators, 40u);
  EXPECT_EQ(hit->busy_ns, 400);
  // Zoomed in, the same place is one operator.
  model.SetTimeRange(9'000, 11'000);
  hit = model.HitTest(model.TimeToX(10'005), model.Rows()[0].axis_y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->kind, Hit::Kind::kOperator);
  EXPECT_EQ(hit->op, "mm");
}

TEST_F(MareyHitTesterTest, AGroupRowAnswersWithItsAggregateOperator) {
  MareyModel model(&names_);
  model.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}, {3, 1, "b"}});
  model.AddOperators({Op(0, 1000, 2000, "conv"), Op(1, 2000, 4000, "conv"),
                      Op(2, 3000, 3000 + 3000, "conv"), Op(3, 5000, 6000, "fc")});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  model.SetGrouping(MareyModel::Grouping::kStage);
  const auto& rows = model.Rows();
  ASSERT_EQ(rows.size(), 6u);
  ASSERT_EQ(rows[1].kind, MareyRowKind::kGroupAvg);
  auto hit = model.HitTest(model.TimeToX(3000), rows[1].axis_y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->op, "conv");
  EXPECT_EQ(hit->start_ns, 2000);  // the average over stage 0's three devices
  EXPECT_EQ(hit->duration_ns, 2000);
  EXPECT_THAT(hit->text, ::testing::HasSubstr("stage 0 (avg over its devices)"));
}

TEST_F(MareyHitTesterTest, AGroupsLabelListsItsRanksAndOffersToExpandIt) {
  MareyModel model(&names_);
  model.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 1, "b"}});
  model.AddOperators(
      {Op(0, 1000, 2000, "conv"), Op(1, 1000, 2000, "conv"), Op(2, 1000, 2000, "conv")});
  model.SetGrouping(MareyModel::Grouping::kHost);
  auto label = model.HitTest(20, model.Rows()[0].axis_y);
  ASSERT_TRUE(label.has_value());
  EXPECT_EQ(label->kind, Hit::Kind::kRowLabel);
  EXPECT_EQ(label->group_key, "host a");
  EXPECT_THAT(label->text, ::testing::HasSubstr("ranks 0, 1"));
  EXPECT_THAT(label->text, ::testing::HasSubstr("click to expand"));
  model.ToggleExpanded("host a");
  label = model.HitTest(20, model.Rows()[0].axis_y);
  ASSERT_TRUE(label.has_value());
  EXPECT_THAT(label->text, ::testing::HasSubstr("click to collapse"));
}

TEST_F(MareyHitTesterTest, RawTimestampsAnswerOnTheDeviceClock) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 10'000, 20'000, "conv"), Op(1, 10'000, 20'000, "conv")});
  model.SetViewport(1000, 600);
  model.SetRawTimestamps(true);
  model.Draw();  // resolves the whole run on the raw clock before TimeToX
  // Rank 1's clock runs 5 us ahead: its operator starts at 15 us.
  auto hit = model.HitTest(model.TimeToX(15'001), model.Rows()[1].axis_y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->start_ns, 15'000);
  EXPECT_FALSE(model.HitTest(model.TimeToX(14'000), model.Rows()[1].axis_y).has_value());
}

TEST_F(MareyHitTesterTest, TheAlertCrossTellsItsAlert) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "a"), Op(1, 0, 100, "a"), Op(2, 0, 100, "a")});
  Alert alert;
  alert.step = 1;
  alert.ranks = {1};
  alert.rule = "straggler";
  alert.text = "rank 1 is slow";
  model.SetAlerts({alert});
  model.SetViewport(1000, 600);
  std::vector<Cross> on_axis;
  for (const Cross& c : model.Draw().crosses) {
    if (c.centre.x < model.plot_rect().x) on_axis.push_back(c);
  }
  ASSERT_EQ(on_axis.size(), 1u);
  auto hit = model.HitTest(on_axis[0].centre.x, on_axis[0].centre.y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->kind, Hit::Kind::kAlert);
  EXPECT_EQ(hit->row_label, "rank 1");
  EXPECT_THAT(hit->text, ::testing::HasSubstr("step 1, rank 1: rank 1 is slow"));
  // The same place on a row without an alert is its label.
  auto other = model.HitTest(on_axis[0].centre.x, model.Rows()[0].axis_y);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->kind, Hit::Kind::kRowLabel);
}

TEST_F(MareyHitTesterTest, AKernelNamesItsClassAndStream) {
  MareyModel model(&names_);
  OperatorRecord kernel = Op(0, 1200, 3000, "sm90_gemm", OpClass::kGpuKernel);
  kernel.gpu_stream = 7;
  model.AddOperators({Op(0, 1000, 2000, "aten::mm"), kernel});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  const auto& rows = model.Rows();
  ASSERT_EQ(rows.size(), 2u);  // the thin CPU row, stream 7
  const auto hit = model.HitTest(model.TimeToX(2000), rows[1].axis_y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->op, "sm90_gemm");
  EXPECT_EQ(hit->op_class, OpClass::kGpuKernel);
  EXPECT_THAT(hit->text, ::testing::HasSubstr("GPU kernel on rank 0 GPU0 s7"));
  const auto thin = model.HitTest(model.TimeToX(1500), rows[0].axis_y);
  ASSERT_TRUE(thin.has_value());
  EXPECT_EQ(thin->op, "aten::mm");
}

TEST_F(MareyHitTesterTest, ThePixelMapGivesTheRowsStepValues) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "a"), Op(1, 0, 100, "a")});
  StepRecord step;
  step.step = 1;
  step.end_ns = 100;
  DeviceStepRecord device;
  device.rank = 1;
  device.flops = 2'000'000'000;
  device.peak_memory_bytes = 3ull << 30;
  step.devices.push_back(device);
  model.AddStep(step);
  model.SetViewport(1000, 600);
  model.Draw();
  const RectF plot = model.plot_rect();
  // Inside the map's middle column (FLOP/s); the tooltip tells all three.
  const float map_x = plot.x + plot.w + MareyView::kPixelMapGap + MareyView::kPixelMapColumn + 1;
  auto hit = model.HitTest(map_x, model.Rows()[1].axis_y);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->kind, Hit::Kind::kPixelMap);
  EXPECT_THAT(hit->text, ::testing::HasSubstr("rank 1\nFLOPs: "));
  EXPECT_THAT(hit->text, ::testing::HasSubstr("peak memory: "));
  // Rank 0 has no values in the step: nothing to tell.
  EXPECT_FALSE(model.HitTest(map_x, model.Rows()[0].axis_y).has_value());
}

}  // namespace
}  // namespace trainscope::viewer

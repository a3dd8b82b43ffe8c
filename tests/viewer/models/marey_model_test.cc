#include "trainscope/viewer/marey_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace trainscope::viewer {
namespace {

class MareyModelTest : public ::testing::Test {
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

  // The rects drawn on a row's axis with a given fill (ignoring alpha).
  std::vector<FilledRect> RectsOnRow(MareyModel& model, size_t row, Color color) {
    std::vector<FilledRect> out;
    const float y = model.Rows()[row].axis_y;
    for (const FilledRect& r : model.Draw().rects) {
      if ((r.fill & 0xFFFFFF) == (color & 0xFFFFFF) && r.rect.y <= y && r.rect.y + r.rect.h >= y &&
          r.rect.x >= model.plot_rect().x - 0.5f) {
        out.push_back(r);
      }
    }
    return out;
  }

  NameTable names_;
  int64_t raw_offset_[8] = {0, 5000, -3000, 7000, 0, 0, 0, 0};
};

TEST_F(MareyModelTest, BandSitsBetweenStartAndEndOnItsAxis) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 1000, 3000, "conv"), Op(1, 1500, 3500, "conv")});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  ASSERT_EQ(model.Rows().size(), 2u);
  auto on_row0 = RectsOnRow(model, 0, kComputeColor);
  ASSERT_EQ(on_row0.size(), 1u);
  EXPECT_NEAR(on_row0[0].rect.x, model.TimeToX(1000), 0.01);
  EXPECT_NEAR(on_row0[0].rect.x + on_row0[0].rect.w, model.TimeToX(3000), 0.01);
  // The same operator on the next axis is joined by a band whose top edge
  // spans the first device's start..end and bottom edge the second's.
  ASSERT_EQ(model.Draw().quads.size(), 1u);
  const Quad& quad = model.Draw().quads[0];
  EXPECT_NEAR(quad.p[0].x, model.TimeToX(1000), 0.01);
  EXPECT_NEAR(quad.p[1].x, model.TimeToX(3000), 0.01);
  EXPECT_NEAR(quad.p[2].x, model.TimeToX(3500), 0.01);
  EXPECT_NEAR(quad.p[3].x, model.TimeToX(1500), 0.01);
  EXPECT_LT(quad.p[0].y, quad.p[2].y);
  EXPECT_GT(quad.p[0].y, model.Rows()[0].axis_y);
  EXPECT_LT(quad.p[2].y, model.Rows()[1].axis_y);
}

TEST_F(MareyModelTest, DifferentOperatorsAreNotJoined) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 1000, 3000, "conv"), Op(1, 1500, 3500, "relu")});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  EXPECT_TRUE(model.Draw().quads.empty());
}

TEST_F(MareyModelTest, SendJoinsItsMatchingReceive) {
  MareyModel model(&names_);
  OperatorRecord send = Op(0, 1000, 2000, "send", OpClass::kSend);
  send.peer = 1;
  send.group_sequence = 4;
  OperatorRecord recv = Op(1, 500, 2100, "recv", OpClass::kRecv);
  recv.peer = 0;
  recv.group_sequence = 4;
  OperatorRecord other = Op(1, 3000, 4000, "recv", OpClass::kRecv);
  other.peer = 0;
  other.group_sequence = 5;  // a different transfer
  model.AddOperators({send, recv, other});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  ASSERT_EQ(model.Draw().quads.size(), 1u);
  EXPECT_NEAR(model.Draw().quads[0].p[3].x, model.TimeToX(500), 0.01);
  EXPECT_EQ(RectsOnRow(model, 0, kSendColor).size(), 1u);
  EXPECT_EQ(RectsOnRow(model, 1, kRecvColor).size(), 2u);
}

// Many rows of many operators: dense frames, drawn from the tracks' coarse
// index when zoomed out. Raw clocks equal to the aligned ones take the exact
// path, which the coarse one must match but for rounding at bin edges.
std::unique_ptr<MareyModel> DenseModel(NameTable* names, uint32_t threads,
                                       bool with_collectives = true) {
  MareyModel::Options options;
  options.layout_threads = threads;
  auto model = std::make_unique<MareyModel>(names, options);
  const uint32_t conv = names->Intern("conv");
  const uint32_t all_reduce = names->Intern("all_reduce");
  std::vector<OperatorRecord> ops;
  for (uint32_t r = 0; r < 200; ++r) {
    int64_t t = (r * 7919) % 3000;
    for (uint32_t i = 0; i < 4000; ++i) {
      OperatorRecord op;
      op.rank = r;
      op.step = i / 100;
      const bool comm = with_collectives && i % 10 == 9;
      op.op_class = comm ? OpClass::kCollective : OpClass::kCompute;
      op.name = comm ? all_reduce : conv;
      op.group_sequence = comm ? i + 1 : 0;
      const int64_t duration = 1000 + (i * 37 + r) % 2000;
      op.start_ns = op.raw_start_ns = t;
      op.end_ns = op.raw_end_ns = t + duration;
      ops.push_back(op);
      t += duration + 200 + (i % 50 == 0 ? 20000 : 0);
    }
  }
  model->AddOperators(ops);
  model->SetViewport(1000, 700);
  return model;
}

TEST_F(MareyModelTest, DenseCoarseFrameMatchesTheExactOne) {
  // Compute only: the exact path paints a sub-pixel collective 2 px wide
  // where the dense loop paints the 1 px it covers.
  std::unique_ptr<MareyModel> model = DenseModel(&names_, 1, /*with_collectives=*/false);
  const std::vector<Color> coarse = model->Draw().image.pixels;
  ASSERT_TRUE(model->frame_stats().dense);
  ASSERT_GT(model->frame_stats().merged_bins, 0u);
  model->SetRawTimestamps(true);
  const std::vector<Color> exact = model->Draw().image.pixels;
  ASSERT_EQ(coarse.size(), exact.size());
  // Painted or not (a merged bin's shade follows its busy time, which the
  // coarse index rounds to its grid).
  size_t differ = 0, painted = 0;
  for (size_t i = 0; i < coarse.size(); ++i) {
    differ += (coarse[i] == 0) != (exact[i] == 0) ? 1 : 0;
    painted += coarse[i] != 0 ? 1 : 0;
  }
  EXPECT_GT(painted, coarse.size() / 2);
  EXPECT_LT(differ, coarse.size() / 50) << differ << " of " << coarse.size() << " pixels differ";
}

TEST_F(MareyModelTest, DenseFrameIsTheSameOnOneThreadAndOnMany) {
  NameTable other_names;
  std::unique_ptr<MareyModel> one = DenseModel(&names_, 1);
  std::unique_ptr<MareyModel> many = DenseModel(&other_names, 5);
  const DrawList& a = one->Draw();
  const DrawList& b = many->Draw();
  ASSERT_FALSE(a.image.pixels.empty());
  EXPECT_TRUE(a.image.pixels == b.image.pixels);
  EXPECT_EQ(one->frame_stats().individual_operators, many->frame_stats().individual_operators);
  EXPECT_EQ(one->frame_stats().merged_bins, many->frame_stats().merged_bins);
}

TEST_F(MareyModelTest, OnlyDenseComputeBinsMerge) {
  MareyModel model(&names_);
  std::vector<OperatorRecord> ops;
  // 0..100 us over 100 bins of 1 us: 40 operators packed into bin 10, one
  // operator each in bins 50, 60, 70.
  for (int i = 0; i < 40; ++i) ops.push_back(Op(0, 10'000 + i * 20, 10'000 + i * 20 + 10, "mm"));
  for (int64_t t : {50'000, 60'000, 70'000}) ops.push_back(Op(0, t, t + 500, "conv"));
  model.AddOperators(ops);
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 100'000);
  model.Draw();
  EXPECT_EQ(model.frame_stats().merged_bins, 1u);
  // The sparse operators are drawn one by one, the dense ones as one band.
  EXPECT_EQ(RectsOnRow(model, 0, kComputeColor).size(), 3u);
  EXPECT_EQ(RectsOnRow(model, 0, kMergedColor).size(), 1u);
  // Zoomed into the cluster, the same operators are no longer merged.
  model.SetTimeRange(9'000, 11'000);
  model.Draw();
  EXPECT_EQ(model.frame_stats().merged_bins, 0u);
  EXPECT_EQ(RectsOnRow(model, 0, kComputeColor).size(), 40u);
}

TEST_F(MareyModelTest, CommunicationIsNeverMerged) {
  MareyModel model(&names_);
  std::vector<OperatorRecord> ops;
  // 40 collectives interleaved with 40 computes, 2.6 px apart at this zoom
  // (so no collective hides behind another), 3 computes per density bin.
  for (int i = 0; i < 40; ++i) {
    ops.push_back(Op(0, 10'000 + i * 40, 10'000 + i * 40 + 15, "all_reduce", OpClass::kCollective));
    ops.push_back(Op(0, 10'000 + i * 40 + 20, 10'000 + i * 40 + 35, "mm"));
  }
  model.AddOperators(ops);
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 12'000);
  model.Draw();
  EXPECT_GE(model.frame_stats().merged_bins, 1u);
  EXPECT_EQ(RectsOnRow(model, 0, kCollectiveColor).size(), 40u);
  EXPECT_TRUE(RectsOnRow(model, 0, kComputeColor).empty());
}

TEST_F(MareyModelTest, StageRowsHoldMinAvgMax) {
  MareyModel model(&names_);
  model.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}, {3, 1, "b"}});
  model.AddOperators({Op(0, 1000, 2000, "conv"), Op(1, 2000, 4000, "conv"),
                      Op(2, 3000, 3000 + 3000, "conv"), Op(3, 5000, 6000, "fc")});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  model.SetGrouping(MareyModel::Grouping::kStage);
  const auto& rows = model.Rows();
  ASSERT_EQ(rows.size(), 6u);  // two stages x min/avg/max
  EXPECT_EQ(rows[0].kind, MareyModel::RowKind::kGroupMin);
  EXPECT_EQ(rows[1].kind, MareyModel::RowKind::kGroupAvg);
  EXPECT_EQ(rows[2].kind, MareyModel::RowKind::kGroupMax);
  EXPECT_EQ(rows[0].group_key, "stage 0");
  EXPECT_EQ(rows[3].group_key, "stage 1");
  struct Expect {
    size_t row;
    int64_t start, end;
  };
  for (Expect e : {Expect{0, 1000, 2000}, Expect{1, 2000, 4000}, Expect{2, 3000, 6000}}) {
    auto rects = RectsOnRow(model, e.row, kComputeColor);
    ASSERT_EQ(rects.size(), 1u) << "row " << e.row;
    EXPECT_NEAR(rects[0].rect.x, model.TimeToX(e.start), 0.01) << "row " << e.row;
    EXPECT_NEAR(rects[0].rect.x + rects[0].rect.w, model.TimeToX(e.end), 0.01) << "row " << e.row;
  }
}

TEST_F(MareyModelTest, ExpandingAGroupShowsItsDevices) {
  MareyModel model(&names_);
  model.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 1, "b"}});
  model.AddOperators(
      {Op(0, 1000, 2000, "conv"), Op(1, 1000, 2000, "conv"), Op(2, 1000, 2000, "conv")});
  model.SetGrouping(MareyModel::Grouping::kHost);
  ASSERT_EQ(model.Rows().size(), 6u);
  model.ToggleExpanded("host a");
  const auto& rows = model.Rows();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[3].kind, MareyModel::RowKind::kDevice);
  EXPECT_EQ(rows[3].rank, 0u);
  EXPECT_EQ(rows[4].rank, 1u);
  EXPECT_EQ(rows[5].group_key, "host b");
  model.ToggleExpanded("host a");
  EXPECT_EQ(model.Rows().size(), 6u);
}

TEST_F(MareyModelTest, RawTimestampsPlaceBandsByDeviceClock) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 10'000, 20'000, "conv"), Op(1, 10'000, 20'000, "conv")});
  model.SetViewport(1000, 600);
  model.Draw();
  auto aligned0 = RectsOnRow(model, 0, kComputeColor);
  auto aligned1 = RectsOnRow(model, 1, kComputeColor);
  ASSERT_EQ(aligned0.size(), 1u);
  ASSERT_EQ(aligned1.size(), 1u);
  EXPECT_NEAR(aligned0[0].rect.x, aligned1[0].rect.x, 0.01);
  model.SetRawTimestamps(true);
  model.Draw();
  auto raw0 = RectsOnRow(model, 0, kComputeColor);
  auto raw1 = RectsOnRow(model, 1, kComputeColor);
  ASSERT_EQ(raw0.size(), 1u);
  ASSERT_EQ(raw1.size(), 1u);
  // Rank 1's clock runs 5 us ahead.
  EXPECT_NEAR(raw1[0].rect.x - raw0[0].rect.x, model.TimeToX(5000) - model.TimeToX(0), 0.05);
}

TEST_F(MareyModelTest, AlertPutsACrossAtTheStartOfTheAxis) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "a"), Op(1, 0, 100, "a"), Op(2, 0, 100, "a")});
  Alert alert;
  alert.step = 1;
  alert.ranks = {1};
  alert.rule = "straggler";
  alert.text = "rank 1 is slow";
  model.SetAlerts({alert});
  model.SetViewport(1000, 600);
  const auto& list = model.Draw();
  const auto& rows = model.Rows();
  std::vector<Cross> on_axis;
  for (const Cross& c : list.crosses) {
    if (c.centre.x < model.plot_rect().x) on_axis.push_back(c);
  }
  ASSERT_EQ(on_axis.size(), 1u);
  EXPECT_FLOAT_EQ(on_axis[0].centre.y, rows[1].axis_y);
}

TEST_F(MareyModelTest, AlertCrossMarksTheCauseNotItsVictims) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "a"), Op(1, 0, 100, "a"), Op(2, 0, 100, "a")});
  Alert alert;
  alert.step = 1;
  alert.ranks = {2, 0, 1};  // cause first, then the devices waiting for it
  alert.cause = 2;
  alert.rule = "collective_wait";
  model.SetAlerts({alert});
  model.SetViewport(1000, 600);
  const auto& list = model.Draw();
  std::vector<float> crossed_axes;
  for (const Cross& c : list.crosses) {
    if (c.centre.x < model.plot_rect().x) crossed_axes.push_back(c.centre.y);
  }
  ASSERT_EQ(crossed_axes.size(), 1u);
  EXPECT_FLOAT_EQ(crossed_axes[0], model.Rows()[2].axis_y);
}

TEST_F(MareyModelTest, AJobWideAlertWithoutACauseCrossesNoAxis) {
  // The job's step-time regression names every device and blames none.
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "a"), Op(1, 0, 100, "a"), Op(2, 0, 100, "a")});
  Alert alert;
  alert.step = 1;
  alert.ranks = {0, 1, 2};
  alert.rule = "step_time_regression";
  model.SetAlerts({alert});
  model.SetViewport(1000, 600);
  const auto& list = model.Draw();
  for (const Cross& c : list.crosses) EXPECT_GE(c.centre.x, model.plot_rect().x);
}

TEST_F(MareyModelTest, FocusOnAlertZoomsToItsOperator) {
  MareyModel model(&names_);
  std::vector<OperatorRecord> ops;
  for (uint64_t step = 1; step <= 10; ++step) {
    const int64_t base = static_cast<int64_t>(step) * 1'000'000;
    for (uint32_t r = 0; r < 4; ++r) {
      ops.push_back(Op(r, base, base + 100'000, "conv", OpClass::kCompute, step));
      ops.push_back(Op(r, base + 200'000, base + (r == 2 ? 600'000 : 300'000), "bwd",
                       OpClass::kCompute, step));
    }
  }
  model.AddOperators(ops);
  model.SetViewport(1000, 600);
  model.Draw();
  const int64_t whole = model.view_end() - model.view_start();
  Alert alert;
  alert.step = 6;
  alert.ranks = {2};
  alert.op = "bwd";
  model.FocusOnAlert(alert);
  model.Draw();
  EXPECT_LT(model.view_end() - model.view_start(), whole / 5);
  EXPECT_LE(model.view_start(), 6'200'000);
  EXPECT_GE(model.view_end(), 6'600'000);
  // The alert's operator is outlined on its device.
  EXPECT_EQ(model.Draw().overlay_rects.size(), 1u);
}

TEST_F(MareyModelTest, AnOperatorFromTheTableIsOutlinedWithoutTintingEveryRow) {
  MareyModel model(&names_);
  std::vector<OperatorRecord> ops;
  for (uint64_t step = 1; step <= 4; ++step) {
    const int64_t base = static_cast<int64_t>(step) * 1'000'000;
    for (uint32_t r = 0; r < 4; ++r) {
      ops.push_back(Op(r, base, base + 100'000, "conv", OpClass::kCompute, step));
      ops.push_back(Op(r, base + 200'000, base + 300'000, "bwd", OpClass::kCompute, step));
    }
  }
  model.AddOperators(ops);
  model.SetViewport(1000, 600);
  const size_t plain_backgrounds = model.Draw().backgrounds.size();
  const uint32_t bwd = names_.Find("bwd");
  model.FocusOn({0, 1, 2, 3}, bwd, std::nullopt, std::nullopt, MareyModel::FocusRows::kPlain);
  const DrawList& plain = model.Draw();
  EXPECT_EQ(plain.backgrounds.size(), plain_backgrounds);        // no row tinted
  EXPECT_EQ(plain.overlay_rects.size(), 16u);                    // every bwd band outlined
  model.FocusOn({0, 1, 2, 3}, bwd, std::nullopt, std::nullopt);  // an alert's way
  EXPECT_EQ(model.Draw().backgrounds.size(), plain_backgrounds + 4);
}

TEST_F(MareyModelTest, ZoomPanAndBrushChangeTheVisibleRange) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 100, "a")});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 1'000'000);
  const RectF plot = model.plot_rect();
  model.BrushTo(plot.x + plot.w / 4, plot.x + plot.w / 2);
  EXPECT_NEAR(model.view_start(), 250'000, 10);
  EXPECT_NEAR(model.view_end(), 500'000, 10);
  model.PanBy(plot.w);  // drag right by a plot width: earlier times
  EXPECT_NEAR(model.view_start(), 0, 10);
  model.ZoomAt(plot.x, 2.0);
  EXPECT_NEAR(model.view_start(), 0, 10);
  EXPECT_NEAR(model.view_end(), 125'000, 10);
  model.ResetZoom();
  model.Draw();
  EXPECT_LE(model.view_start(), 0);
  EXPECT_GE(model.view_end(), 100);
  EXPECT_LT(model.view_end(), 1000);
}

TEST_F(MareyModelTest, ThinRowsAreRasterisedWithClassColours) {
  MareyModel model(&names_);
  std::vector<OperatorRecord> ops;
  for (uint32_t r = 0; r < 200; ++r) {
    ops.push_back(Op(r, 0, 40'000, "conv"));
    ops.push_back(Op(r, 60'000, 100'000, "all_reduce", OpClass::kCollective));
  }
  model.AddOperators(ops);
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 100'000);
  const DrawList& list = model.Draw();
  EXPECT_TRUE(model.frame_stats().dense);
  ASSERT_FALSE(list.image.pixels.empty());
  EXPECT_TRUE(list.quads.empty());
  const PixelImage& image = list.image;
  auto pixel = [&](float x, float y) {
    const int px = static_cast<int>(x - image.dest.x);
    const int py = static_cast<int>(y - image.dest.y);
    return image.pixels[static_cast<size_t>(py) * image.width + px];
  };
  const float y = model.Rows()[150].axis_y;
  EXPECT_EQ(pixel(model.TimeToX(20'000), y), kComputeColor);
  EXPECT_EQ(pixel(model.TimeToX(80'000), y), kCollectiveColor);
  EXPECT_EQ(pixel(model.TimeToX(50'000), y), 0u);
}

TEST_F(MareyModelTest, RankFilterShowsOnlyThoseDevices) {
  MareyModel model(&names_);
  model.AddOperators({Op(0, 0, 10, "a"), Op(1, 0, 10, "a"), Op(2, 0, 10, "a")});
  model.SetRankFilter({2, 0});
  const auto& rows = model.Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rank, 0u);
  EXPECT_EQ(rows[1].rank, 2u);
}

// --- GPU streams.

OperatorRecord Gpu(OperatorRecord op, uint32_t stream, uint32_t device = 0) {
  op.gpu_device = device;
  op.gpu_stream = stream;
  return op;
}

// The model's rows' labels, top to bottom.
std::vector<std::string> Labels(MareyModel& model) {
  std::vector<std::string> labels;
  for (const MareyModel::Row& row : model.Rows()) labels.push_back(row.label);
  return labels;
}

TEST_F(MareyModelTest, GpuStreamsAreRowsUnderAThinCpuRowColouredByClass) {
  MareyModel model(&names_);
  model.AddOperators(
      {Op(0, 1000, 2000, "aten::mm"), Gpu(Op(0, 1200, 3000, "sm90_gemm", OpClass::kGpuKernel), 7),
       Gpu(Op(0, 3500, 5000, "ncclDevKernel_AllReduce", OpClass::kGpuCollective), 20),
       Gpu(Op(0, 500, 900, "Memcpy HtoD", OpClass::kGpuCopy), 9),
       Op(1, 1000, 2000, "aten::mm")});  // a CPU-only device
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  EXPECT_THAT(Labels(model), ::testing::ElementsAre("rank 0 CPU", "rank 0 GPU0 s7",
                                                    "rank 0 GPU0 s9", "rank 0 GPU0 s20", "rank 1"));
  const auto& rows = model.Rows();
  EXPECT_FALSE(rows[0].gpu);
  EXPECT_TRUE(rows[1].gpu);
  EXPECT_EQ(rows[3].gpu_stream, 20u);
  EXPECT_LT(rows[0].height, rows[1].height * 0.6f);  // the CPU row is thin
  EXPECT_NEAR(rows[4].height, rows[1].height, 0.01);
  // Each stream's work on its own row, in its class's colour.
  EXPECT_EQ(RectsOnRow(model, 0, kComputeColor).size(), 1u);  // aten::mm
  ASSERT_EQ(RectsOnRow(model, 1, kComputeColor).size(), 1u);  // the kernel, green
  EXPECT_NEAR(RectsOnRow(model, 1, kComputeColor)[0].rect.x, model.TimeToX(1200), 0.01);
  EXPECT_EQ(RectsOnRow(model, 2, kGpuCopyColor).size(), 1u);
  EXPECT_EQ(RectsOnRow(model, 3, kCollectiveColor).size(), 1u);
  EXPECT_TRUE(RectsOnRow(model, 1, kCollectiveColor).empty());
  EXPECT_TRUE(RectsOnRow(model, 3, kComputeColor).empty());
}

TEST_F(MareyModelTest, CpuRowsOfGpuDevicesAreShownOnDemand) {
  MareyModel model(&names_);
  model.AddOperators(
      {Op(0, 1000, 2000, "aten::mm"), Gpu(Op(0, 1200, 3000, "sm90_gemm", OpClass::kGpuKernel), 7)});
  model.SetShowCpuRows(false);
  EXPECT_THAT(Labels(model), ::testing::ElementsAre("rank 0 GPU0 s7"));
  model.SetShowCpuRows(true);
  EXPECT_THAT(Labels(model), ::testing::ElementsAre("rank 0 CPU", "rank 0 GPU0 s7"));
}

TEST_F(MareyModelTest, OneCollectivesNcclKernelsAreJoinedAcrossDevicesWhateverTheirStreams) {
  MareyModel model(&names_);
  const uint32_t group = names_.Intern("0");
  auto nccl = [&](uint32_t rank, int64_t start, uint32_t stream, uint64_t sequence) {
    OperatorRecord op = Gpu(
        Op(rank, start, start + 1000, "ncclDevKernel_AllReduce", OpClass::kGpuCollective), stream);
    op.group = group;
    op.group_sequence = sequence;
    return op;
  };
  model.AddOperators({
      Gpu(Op(0, 1000, 2000, "sm90_gemm", OpClass::kGpuKernel), 7),
      nccl(0, 3000, 20, 1),
      Gpu(Op(1, 1100, 2100, "sm90_gemm", OpClass::kGpuKernel), 7),
      nccl(1, 3200, 24, 1),  // another stream on rank 1
      nccl(1, 6000, 24, 2),  // the next collective: no partner
      // The same kernel on another stream: kernels join only on one stream.
      Gpu(Op(1, 7000, 8000, "sm90_gemm", OpClass::kGpuKernel), 9),
  });
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  model.SetShowCpuRows(false);
  ASSERT_THAT(Labels(model),
              ::testing::ElementsAre("rank 0 GPU0 s7", "rank 0 GPU0 s20", "rank 1 GPU0 s7",
                                     "rank 1 GPU0 s9", "rank 1 GPU0 s24"));
  const auto& rows = model.Rows();
  std::vector<Quad> yellow, green;
  for (const Quad& q : model.Draw().quads) {
    if ((q.fill & 0xFFFFFF) == (kCollectiveColor & 0xFFFFFF)) yellow.push_back(q);
    if ((q.fill & 0xFFFFFF) == (kComputeColor & 0xFFFFFF)) green.push_back(q);
  }
  // The NCCL band runs from rank 0's stream 20 to rank 1's stream 24,
  // across the rows between them.
  ASSERT_EQ(yellow.size(), 1u);
  EXPECT_NEAR(yellow[0].p[0].x, model.TimeToX(3000), 0.01);
  EXPECT_NEAR(yellow[0].p[3].x, model.TimeToX(3200), 0.01);
  EXPECT_GT(yellow[0].p[0].y, rows[1].axis_y);
  EXPECT_LT(yellow[0].p[0].y, rows[2].top);
  EXPECT_LT(yellow[0].p[3].y, rows[4].axis_y);
  EXPECT_GT(yellow[0].p[3].y, rows[4].top);
  // The kernel joins its twin on the next device.
  ASSERT_EQ(green.size(), 1u);
  EXPECT_NEAR(green[0].p[3].x, model.TimeToX(1100), 0.01);
  EXPECT_EQ(model.Draw().quads.size(), 2u);
}

TEST_F(MareyModelTest, CpuRowsJoinCpuRowsAcrossGpuStreams) {
  MareyModel model(&names_);
  model.AddOperators(
      {Op(0, 1000, 2000, "aten::mm"), Gpu(Op(0, 1200, 3000, "aten::mm", OpClass::kGpuKernel), 7),
       Op(1, 1000, 2000, "aten::mm"), Gpu(Op(1, 1200, 3000, "aten::mm", OpClass::kGpuKernel), 7)});
  model.SetViewport(1000, 600);
  model.SetTimeRange(0, 10'000);
  // CPU to CPU and stream to stream: a CPU operator never joins a kernel,
  // even one of the same name.
  ASSERT_EQ(model.Rows().size(), 4u);
  ASSERT_EQ(model.Draw().quads.size(), 2u);
  for (const Quad& q : model.Draw().quads) {
    const bool cpu = q.p[0].y < model.Rows()[1].top;
    EXPECT_EQ(q.p[3].y < model.Rows()[3].top, cpu);
  }
}

}  // namespace
}  // namespace trainscope::viewer

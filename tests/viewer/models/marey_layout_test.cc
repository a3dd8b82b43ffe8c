#include "trainscope/viewer/marey_layout.h"

#include <gtest/gtest.h>

#include <memory>

namespace trainscope::viewer {
namespace {

// A frame over tracks built here: no model, no names.
class MareyLayoutTest : public ::testing::Test {
 protected:
  MareyTrack& AddRow(uint32_t rank) {
    tracks_.push_back(std::make_unique<MareyTrack>());
    tracks_.back()->rank = rank;
    MareyRow row;
    row.rank = rank;
    row.label = "rank " + std::to_string(rank);
    rows_.push_back(row);
    return *tracks_.back();
  }
  static MareyTrack::Op Op(int64_t start, int64_t end, uint64_t key,
                           OpClass cls = OpClass::kCompute) {
    MareyTrack::Op op;
    op.start = start;
    op.end = end;
    op.key = key;
    op.cls = cls;
    return op;
  }
  // Prepares the tracks and fills the frame's per-row parts.
  MareyLayout::Frame MakeFrame(int64_t start, int64_t end, int width = 1000, int height = 600) {
    pointers_.clear();
    for (auto& track : tracks_) {
      track->Prepare();
      pointers_.push_back(track.get());
    }
    MareyLayout::Frame frame;
    frame.view.Resize(width, height);
    frame.view.start = start;
    frame.view.end = end;
    frame.rows = &rows_;
    frame.tracks = &pointers_;
    frame.stages.assign(rows_.size(), -1);
    frame.step_values.assign(rows_.size(), {});
    frame.steps = &steps_;
    frame.devices = rows_.size();
    return frame;
  }
  // Rects of `color` inside the plot (the legend below it has swatches).
  static size_t CountRects(const DrawList& list, const RectF& plot, Color color) {
    size_t n = 0;
    for (const FilledRect& r : list.rects) {
      n += (r.fill & 0xFFFFFF) == (color & 0xFFFFFF) && plot.Contains(r.rect.x, r.rect.y);
    }
    return n;
  }

  std::vector<std::unique_ptr<MareyTrack>> tracks_;
  std::vector<const MareyTrack*> pointers_;
  std::vector<MareyRow> rows_;
  std::map<uint64_t, StepRecord> steps_;
};

TEST_F(MareyLayoutTest, RowsShareTheHeightByWeightAndAreFoundByY) {
  AddRow(0);
  rows_.back().weight = 0.5f;  // a GPU device's CPU row
  AddRow(0).Push(Op(1000, 3000, 7, OpClass::kGpuKernel));
  rows_.back().gpu = true;
  AddRow(0).Push(Op(1000, 3000, 8, OpClass::kGpuCopy));
  rows_.back().gpu = true;
  MareyLayout layout({});
  const MareyLayout::Frame frame = MakeFrame(0, 10'000);
  layout.Lay(frame);
  EXPECT_NEAR(rows_[0].height * 2, rows_[1].height, 0.01);
  EXPECT_NEAR(rows_[0].height + rows_[1].height + rows_[2].height, frame.view.plot.h, 0.01);
  EXPECT_NEAR(rows_[1].top, rows_[0].top + rows_[0].height, 0.01);
  EXPECT_EQ(layout.RowAt(rows_[0].axis_y), 0u);
  EXPECT_EQ(layout.RowAt(rows_[1].top + 1), 1u);
  EXPECT_EQ(layout.RowAt(rows_[2].axis_y), 2u);
  EXPECT_EQ(layout.RowAt(frame.view.plot.y + frame.view.plot.h + 50), 2u);
  // Kernels green, copies teal; rows of one device are not joined.
  EXPECT_EQ(CountRects(layout.list(), frame.view.plot, kComputeColor), 1u);
  EXPECT_EQ(CountRects(layout.list(), frame.view.plot, kGpuCopyColor), 1u);
  EXPECT_TRUE(layout.list().quads.empty());
}

TEST_F(MareyLayoutTest, MergedBinsJoinOnlyAdjacentRows) {
  // Dense kernels (merged into bins) on stream 7 of two devices; with a
  // stream row between them their bins are not joined (the band would wash
  // over that row), without one they are.
  auto dense = [&](uint32_t rank, uint32_t stream, uint64_t key_base) {
    MareyTrack& track = AddRow(rank);
    rows_.back().gpu = true;
    rows_.back().gpu_stream = stream;
    for (int i = 0; i < 2000; ++i) {
      track.Push(Op(i * 5, i * 5 + 4, key_base + static_cast<uint64_t>(i), OpClass::kGpuKernel));
    }
  };
  dense(0, 7, 0);
  dense(1, 7, 100'000);
  MareyLayout layout({});
  layout.Lay(MakeFrame(0, 10'000));
  EXPECT_GT(layout.stats().merged_bins, 0u);
  const size_t adjacent_joins = layout.list().quads.size();
  EXPECT_GT(adjacent_joins, 0u);  // merged bins of adjacent rows

  rows_.clear();
  tracks_.clear();
  dense(0, 7, 0);
  AddRow(0);  // rank 0's stream 9, empty
  rows_.back().gpu = true;
  rows_.back().gpu_stream = 9;
  dense(1, 7, 100'000);
  MareyLayout apart({});
  apart.Lay(MakeFrame(0, 10'000));
  EXPECT_GT(apart.stats().merged_bins, 0u);
  EXPECT_TRUE(apart.list().quads.empty());
}

TEST_F(MareyLayoutTest, TheSameOperatorOnAdjacentRowsIsJoined) {
  AddRow(0).Push(Op(1000, 3000, 7));
  AddRow(1).Push(Op(1500, 3500, 7));
  MareyLayout layout({});
  const MareyLayout::Frame frame = MakeFrame(0, 10'000);
  layout.Lay(frame);
  EXPECT_EQ(CountRects(layout.list(), frame.view.plot, kComputeColor), 2u);
  ASSERT_EQ(layout.list().quads.size(), 1u);
  EXPECT_NEAR(layout.list().quads[0].p[0].x, frame.view.TimeToX(1000), 0.01);
  EXPECT_NEAR(layout.list().quads[0].p[2].x, frame.view.TimeToX(3500), 0.01);
  EXPECT_EQ(layout.stats().rows, 2u);
  EXPECT_EQ(layout.stats().joins, 1u);
  EXPECT_FALSE(layout.stats().dense);
  // Rows are spread over the plot, top to bottom.
  EXPECT_NEAR(rows_[0].axis_y, frame.view.plot.y + layout.pitch() / 2, 0.01);
  EXPECT_GT(rows_[1].axis_y, rows_[0].axis_y);
}

TEST_F(MareyLayoutTest, ComputeJoinsOnlyWithinAStageSendsAcrossStages) {
  AddRow(0).Push(Op(1000, 2000, 7));
  tracks_.back()->Push(Op(2500, 3000, 9, OpClass::kSend));
  AddRow(4).Push(Op(1000, 2000, 7));
  tracks_.back()->Push(Op(2600, 3100, 9, OpClass::kRecv));
  MareyLayout layout({});
  MareyLayout::Frame frame = MakeFrame(0, 10'000);
  frame.stages = {0, 1};
  layout.Lay(frame);
  ASSERT_EQ(layout.list().quads.size(), 1u);
  EXPECT_NEAR(layout.list().quads[0].p[0].x, frame.view.TimeToX(2500), 0.01);
}

TEST_F(MareyLayoutTest, CrowdedComputeBinsAreMergedAndReported) {
  MareyTrack& track = AddRow(0);
  // 200 operators in the first 10 % of the range, one far right.
  for (int64_t i = 0; i < 200; ++i) track.Push(Op(i * 50, i * 50 + 20, i));
  track.Push(Op(90'000, 91'000, 999));
  MareyLayout layout({.bins = 100});
  layout.Lay(MakeFrame(0, 100'000));
  EXPECT_TRUE(layout.merged(0, 0));
  EXPECT_FALSE(layout.merged(0, 90));
  EXPECT_GT(layout.stats().merged_bins, 0u);
  EXPECT_EQ(layout.stats().individual_operators, 1u);
}

TEST_F(MareyLayoutTest, ThinRowsBecomeOneImage) {
  for (uint32_t rank = 0; rank < 300; ++rank) AddRow(rank).Push(Op(1000, 5000, rank));
  MareyLayout layout({.layout_threads = 2});
  layout.Lay(MakeFrame(0, 10'000));
  EXPECT_TRUE(layout.stats().dense);
  ASSERT_FALSE(layout.list().image.pixels.empty());
  EXPECT_TRUE(layout.list().quads.empty());
  // The middle of the band on the first row's axis is compute-coloured.
  const PixelImage& image = layout.list().image;
  const int x = image.width / 3;
  const int y = static_cast<int>(rows_[0].axis_y - image.dest.y);
  EXPECT_EQ(image.pixels[static_cast<size_t>(y) * image.width + x] & 0xFFFFFF,
            kComputeColor & 0xFFFFFF);
}

TEST_F(MareyLayoutTest, NoRowsSaysSo) {
  MareyLayout layout({});
  layout.Lay(MakeFrame(0, 10'000));
  bool said = false;
  for (const Text& text : layout.list().texts) said = said || text.text == "No operators yet";
  EXPECT_TRUE(said);
  EXPECT_EQ(layout.stats().rows, 0u);
}

}  // namespace
}  // namespace trainscope::viewer

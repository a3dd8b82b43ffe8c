#include "trainscope/viewer/traffic_matrix_layout.h"

#include <gtest/gtest.h>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

// 16 devices on 2 hosts, one data-parallel ring; the link 5 -> 6 is 8x slow.
JobData SlowLinkJob() {
  SyntheticJobOptions options;
  options.devices = 16;
  options.hosts = 2;
  options.steps = 6;
  options.straggler = std::nullopt;
  options.slow_link = std::make_pair(5u, 6u);
  return GenerateSyntheticJob(options);
}

int Darkness(Color c) {
  return 765 - static_cast<int>(((c >> 16) & 0xFF) + ((c >> 8) & 0xFF) + (c & 0xFF));
}

TEST(TrafficMatrixLayoutTest, TheSlowLinkIsTheDarkestCellOutlinedAndFirstInTheBoxPlots) {
  ViewerState state;
  state.Load(SlowLinkJob());
  TrafficMatrixLayout& layout = state.traffic_matrix;
  layout.SetViewport(1600, 900);
  const DrawList& list = layout.Draw();
  const TrafficModel::Matrix& m = state.traffic.matrix();
  ASSERT_EQ(m.size(), 16u);
  const size_t slow_src = *m.IndexOf(5), slow_dst = *m.IndexOf(6);

  // The cells' image: the slow cell is the darkest by a wide margin.
  ASSERT_FALSE(list.images.empty());
  const PixelImage& cells = list.images[0];
  ASSERT_EQ(cells.width, 16);
  const int slow = Darkness(cells.pixels[slow_src * 16 + slow_dst]);
  int others = 0;
  for (size_t k = 0; k < cells.pixels.size(); ++k) {
    if (k != slow_src * 16 + slow_dst) others = std::max(others, Darkness(cells.pixels[k]));
  }
  EXPECT_GT(slow, others + 200);

  // Outlined.
  ASSERT_EQ(list.overlay_rects.size(), 1u);
  const RectF cell = layout.CellRect(slow_src, slow_dst);
  const RectF outline = list.overlay_rects[0].rect;
  EXPECT_TRUE(outline.Contains(cell.x + cell.w / 2, cell.y + cell.h / 2));
  EXPECT_LT(outline.w, cell.w * 3);

  ASSERT_FALSE(layout.boxes().empty());
  EXPECT_EQ(layout.boxes()[0].src, slow_src);
  EXPECT_EQ(layout.boxes()[0].dst, slow_dst);
  EXPECT_EQ(layout.boxes()[0].box.count, 6u);
  // Its bandwidth sits below every other listed link's.
  for (size_t k = 1; k < layout.boxes().size(); ++k)
    EXPECT_LT(layout.boxes()[0].box.max, layout.boxes()[k].box.min) << k;
}

TEST(TrafficMatrixLayoutTest, HoverNamesThePairAndItsFigures) {
  ViewerState state;
  state.Load(SlowLinkJob());
  TrafficMatrixLayout& layout = state.traffic_matrix;
  layout.SetViewport(1600, 900);
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const size_t src = *m.IndexOf(7), dst = *m.IndexOf(8);
  const RectF cell = layout.CellRect(src, dst);
  const auto hit = layout.CellAt(cell.x + cell.w / 2, cell.y + cell.h / 2);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, std::make_pair(src, dst));
  const std::string text = layout.TooltipAt(cell.x + cell.w / 2, cell.y + cell.h / 2);
  EXPECT_NE(text.find("rank 7 (node-0) -> rank 8 (node-1)"), std::string::npos) << text;
  EXPECT_NE(text.find("across hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("over 6 steps"), std::string::npos) << text;
  EXPECT_NE(text.find("median"), std::string::npos) << text;
  // A cell without traffic says so; outside the matrix: nothing.
  const RectF empty = layout.CellRect(dst, src);
  EXPECT_NE(layout.TooltipAt(empty.x + 1, empty.y + 1).find("no traffic"), std::string::npos);
  EXPECT_EQ(layout.TooltipAt(2, 890), "");
  // The row bar: the device's totals.
  const RectF bars = layout.bars_rect();
  EXPECT_NE(layout.TooltipAt(bars.x + 1, cell.y + 1).find("rank 7 (node-0) sent"),
            std::string::npos);
  EXPECT_FALSE(layout.CellAt(bars.x + 1, cell.y + 1).has_value());
}

TEST(TrafficMatrixLayoutTest, WithoutTrafficSaysSo) {
  TrafficModel model;
  TrafficMatrixLayout layout(&model);
  layout.SetViewport(800, 600);
  const DrawList& list = layout.Draw();
  ASSERT_EQ(list.texts.size(), 1u);
  EXPECT_NE(list.texts[0].text.find("no traffic"), std::string::npos);
  EXPECT_FALSE(layout.CellAt(400, 300).has_value());
}

TEST(TrafficMatrixLayoutTest, AThousandDevicesStayOneImageWithinTheView) {
  TrafficModel model;
  std::vector<PairTrafficRecord> ring;
  for (uint32_t r = 0; r < 1024; ++r) {
    PairTrafficRecord t;
    t.step = 1;
    t.src_rank = r;
    t.dst_rank = (r + 1) % 1024;
    t.bytes = 1000;
    t.duration_ns = 10;
    t.src_host = "h" + std::to_string(r / 8);
    t.dst_host = "h" + std::to_string(t.dst_rank / 8);
    ring.push_back(t);
  }
  StepRecord step;
  step.step = 1;
  step.traffic = ring;
  model.AddStep(step);
  TrafficMatrixLayout layout(&model);
  layout.SetViewport(1920, 1080);
  const DrawList& list = layout.Draw();
  ASSERT_GE(list.images.size(), 1u);
  const RectF matrix = layout.matrix_rect();
  EXPECT_LE(matrix.y + matrix.h, 1080);
  // Fewer pixels than devices: one pixel per pixel, pooled by maximum, so
  // every pixel row (a few devices, each sending to its ring successor)
  // keeps a tinted pixel instead of being sampled away.
  const PixelImage& cells = list.images[0];
  EXPECT_EQ(cells.width, static_cast<int>(matrix.w));
  EXPECT_LT(cells.width, 1024);
  int tinted = 0;
  for (int row = 0; row < cells.height; ++row) {
    bool any = false;
    for (int col = 0; col < cells.width; ++col)
      any = any || cells.pixels[row * cells.width + col] != TrafficMatrixLayout::kEmptyColor;
    tinted += any;
  }
  EXPECT_EQ(tinted, cells.height);
  // Host separators, labels and bars stay bounded by the devices, not pairs.
  EXPECT_LT(list.PrimitiveCount(), 1024u * 8);
}

TEST(TrafficMatrixLayoutTest, LinksWithoutBytesGetNoBandwidthBoxes) {
  TrafficModel model;
  StepRecord step;
  step.step = 1;
  PairTrafficRecord t;
  t.step = 1;
  t.src_rank = 0;
  t.dst_rank = 1;
  t.duration_ns = 5'000'000;  // time, but the trace named no sizes
  step.traffic = {t};
  model.AddStep(step);
  TrafficMatrixLayout layout(&model);
  layout.SetViewport(1200, 800);
  EXPECT_TRUE(layout.boxes().empty());
  bool said = false;
  for (const Text& text : layout.Draw().texts) said = said || text.text.find("no bandwidth") == 0;
  EXPECT_TRUE(said);
}

TEST(TrafficMatrixLayoutTest, HeatColorGoesFromWhiteToDarkRed) {
  EXPECT_EQ(TrafficMatrixLayout::HeatColor(0), Rgba(255, 255, 255));
  EXPECT_EQ(TrafficMatrixLayout::HeatColor(1), Rgba(127, 0, 0));
  EXPECT_LT(Darkness(TrafficMatrixLayout::HeatColor(0.3)),
            Darkness(TrafficMatrixLayout::HeatColor(0.6)));
}

}  // namespace
}  // namespace trainscope::viewer

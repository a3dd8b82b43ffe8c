#include "trainscope/viewer/marey_pixel_map.h"

#include <gtest/gtest.h>

#include <vector>

namespace trainscope::viewer {
namespace {

std::vector<MareyRow> Rows(std::vector<MareyRowKind> kinds) {
  std::vector<MareyRow> rows;
  float top = 60;
  for (MareyRowKind kind : kinds) {
    MareyRow row;
    row.kind = kind;
    row.top = top;
    row.height = 40;
    top += 40;
    rows.push_back(row);
  }
  return rows;
}

// The cells of one column (0: FLOPs, 1: FLOP/s, 2: memory), top to bottom.
std::vector<Color> Column(const DrawList& list, const MareyView& view, int column) {
  std::vector<Color> cells;
  for (const FilledRect& r : list.rects) {
    if (r.rect.x == view.PixelMapX(column)) cells.push_back(r.fill);
  }
  return cells;
}

TEST(MareyPixelMapTest, ShadesEachRowsStepValuesDarkerForLarger) {
  MareyView view;
  view.Resize(1000, 600);
  DeviceStepRecord low, high;
  low.flops = 10;
  low.peak_memory_bytes = 5000;
  high.flops = 1000;
  high.peak_memory_bytes = 5000;
  DrawList list;
  MareyPixelMap::Add(view, Rows({MareyRowKind::kDevice, MareyRowKind::kDevice}), {{&low}, {&high}},
                     &list);
  ASSERT_EQ(list.rects.size(), 6u);
  const std::vector<Color> flops = Column(list, view, 0);
  ASSERT_EQ(flops.size(), 2u);
  // The ramp ends in deep blue: the larger value has less red.
  EXPECT_GT((flops[0] >> 16) & 0xFF, (flops[1] >> 16) & 0xFF);
  EXPECT_EQ(flops[1], MareyPixelMap::kHighColor);
  // Equal memory: equal shades.
  const std::vector<Color> memory = Column(list, view, 2);
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0], memory[1]);
}

TEST(MareyPixelMapTest, GroupRowsShowTheirMinimumAndMaximumAndEmptyRowsGrey) {
  MareyView view;
  view.Resize(1000, 600);
  DeviceStepRecord a, b;
  a.flops = 100;
  b.flops = 300;
  DrawList list;
  MareyPixelMap::Add(
      view, Rows({MareyRowKind::kGroupMin, MareyRowKind::kGroupMax, MareyRowKind::kDevice}),
      {{&a, &b}, {&a, &b}, {}}, &list);
  const std::vector<Color> flops = Column(list, view, 0);
  ASSERT_EQ(flops.size(), 3u);
  EXPECT_EQ(flops[1], MareyPixelMap::kHighColor);  // the max row holds the top value
  EXPECT_NE(flops[0], flops[1]);                   // the min row a third of it
  EXPECT_EQ(flops[2], MareyPixelMap::kNoValueColor);
}

}  // namespace
}  // namespace trainscope::viewer

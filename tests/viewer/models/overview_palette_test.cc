#include "trainscope/viewer/overview_palette.h"

#include <gtest/gtest.h>

#include <set>

namespace trainscope::viewer {
namespace {

TEST(OverviewPaletteTest, SixteenRankColoursThenTheyRepeat) {
  std::set<Color> colours;
  for (uint32_t rank = 0; rank < 16; ++rank) colours.insert(OverviewPalette::Rank(rank));
  EXPECT_EQ(colours.size(), 16u);
  EXPECT_EQ(OverviewPalette::Rank(16), OverviewPalette::Rank(0));
}

TEST(OverviewPaletteTest, ASwatchIsASquareOrALineAndItsLabel) {
  DrawList list;
  const float square =
      OverviewPalette::AddSwatch(&list, 10, 20, OverviewPalette::kWaitColor, "wait");
  ASSERT_EQ(list.rects.size(), 1u);
  EXPECT_EQ(list.rects[0].fill, OverviewPalette::kWaitColor);
  ASSERT_EQ(list.texts.size(), 1u);
  EXPECT_EQ(list.texts[0].text, "wait");
  EXPECT_GT(list.texts[0].x, 10);
  const float line = OverviewPalette::AddSwatch(&list, 10, 40, OverviewPalette::kCommColor,
                                                "a longer label", true);
  EXPECT_EQ(list.lines.size(), 1u);
  EXPECT_GT(line, square);  // the width follows the label
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/loss_selection_layout.h"

#include <gtest/gtest.h>

#include "trainscope/viewer/loss_drawing.h"

namespace trainscope::viewer {
namespace {

LossCell Cell(uint64_t item, uint32_t place, bool candidate = false, bool chosen = false) {
  LossCell cell;
  cell.item = item;
  cell.place = place;
  cell.contribution = 1.0 / place;
  cell.label = 3;
  cell.prediction = candidate ? 5 : 3;
  cell.misclassified = candidate;
  cell.candidate = candidate;
  cell.chosen = chosen;
  return cell;
}

bool HasText(const DrawList& list, const std::string& text) {
  for (const Text& t : list.texts) {
    if (t.text == text) return true;
  }
  return false;
}

TEST(LossSelectionLayoutTest, WithoutAListItShowsThePlaceholder) {
  LossSelectionLayout layout;
  layout.Lay({.width = 600, .height = 400});
  EXPECT_TRUE(HasText(layout.list(), loss_drawing::kNoDataText));
  EXPECT_TRUE(layout.cells().empty());
  EXPECT_EQ(layout.content_height(), 400);
  EXPECT_FALSE(layout.ItemAt(300, 200).has_value());
}

TEST(LossSelectionLayoutTest, CellsFillTheGridInPlaceOrderAndAnswerClicks) {
  LossStateRecord state;
  state.epoch = 4;
  state.top_n = 3;
  state.items.resize(3);
  LossSelectionLayout layout;
  layout.Lay({.width = 900,
              .height = 500,
              .state = &state,
              .cells = {Cell(11, 1, /*candidate=*/true), Cell(22, 2, false, /*chosen=*/true),
                        Cell(33, 3)}});
  ASSERT_EQ(layout.cells().size(), 3u);
  const RectF first = layout.cells()[0].rect;
  const RectF second = layout.cells()[1].rect;
  EXPECT_GT(second.x, first.x);  // one row: left to right
  EXPECT_EQ(layout.ItemAt(first.x + 5, first.y + 5), 11u);
  EXPECT_EQ(layout.ItemAt(second.x + second.w / 2, second.y + 5), 22u);
  EXPECT_FALSE(layout.ItemAt(1, 1).has_value());
  // A candidate is framed red, the chosen one blue, each behind its cell.
  bool red = false, blue = false;
  for (const FilledRect& r : layout.list().backgrounds) {
    red = red || (r.fill == loss_drawing::kCandidateColor && r.rect.x == first.x);
    blue = blue || (r.fill == loss_drawing::kChosenColor && r.rect.x == second.x);
  }
  EXPECT_TRUE(red);
  EXPECT_TRUE(blue);
  EXPECT_TRUE(HasText(layout.list(), "#1 \xC2\xB7 item 11"));
  EXPECT_NE(layout.TooltipAt(first.x + 5, first.y + 5).find("candidate mislabeled"),
            std::string::npos);
  EXPECT_LE(layout.content_height(), 500);
}

TEST(LossSelectionLayoutTest, TooManyCellsRunPastTheBottomToScroll) {
  LossStateRecord state;
  state.items.resize(200);
  std::vector<LossCell> cells;
  for (uint32_t i = 1; i <= 200; ++i) cells.push_back(Cell(i, i));
  LossSelectionLayout layout;
  layout.Lay({.width = 600, .height = 300, .state = &state, .cells = cells});
  EXPECT_GT(layout.content_height(), 300);
  EXPECT_EQ(layout.ItemAt(layout.cells().back().rect.x + 2, layout.cells().back().rect.y + 2),
            200u);
}

}  // namespace
}  // namespace trainscope::viewer

// Linked selection in the Marey graph (issue 24): the devices selected in
// any view are tinted, and a selected link's transfers (both directions)
// are outlined and each send joined to its receive, whichever rows lie
// between the two devices.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/marey_model.h"

namespace trainscope::viewer {
namespace {

class MareySelectionTest : public ::testing::Test {
 protected:
  OperatorRecord Transfer(uint32_t rank, int32_t peer, OpClass cls, int64_t start, int64_t end,
                          uint64_t sequence) {
    OperatorRecord op;
    op.rank = rank;
    op.peer = peer;
    op.op_class = cls;
    op.start_ns = op.raw_start_ns = start;
    op.end_ns = op.raw_end_ns = end;
    op.name = names_.Intern(cls == OpClass::kSend ? "send" : "recv");
    op.group_sequence = sequence;
    op.step = 1;
    return op;
  }

  // Four devices: 0 -> 2 and 2 -> 0 (the link), 1 -> 3 (another link), and
  // rank 1 between the link's rows.
  void Fill(MareyModel& model) {
    model.AddOperators({Transfer(0, 2, OpClass::kSend, 1000, 1500, 1),
                        Transfer(2, 0, OpClass::kRecv, 900, 1800, 1),
                        Transfer(2, 0, OpClass::kSend, 3000, 3400, 1),
                        Transfer(0, 2, OpClass::kRecv, 2900, 3600, 1),
                        Transfer(1, 3, OpClass::kSend, 1000, 1500, 1),
                        Transfer(3, 1, OpClass::kRecv, 900, 1800, 1)});
    model.SetViewport(1000, 600);
    model.SetTimeRange(0, 5000);
  }

  static size_t Count(const std::vector<FilledRect>& rects, Color fill, Color stroke) {
    size_t n = 0;
    for (const FilledRect& r : rects) n += r.fill == fill && r.stroke == stroke;
    return n;
  }

  NameTable names_;
};

TEST_F(MareySelectionTest, NothingSelectedDrawsNoSelection) {
  MareyModel model(&names_);
  Fill(model);
  const DrawList& list = model.Draw();
  EXPECT_EQ(Count(list.backgrounds, kSelectTintColor, 0), 0u);
  EXPECT_EQ(Count(list.overlay_rects, 0, kSelectColor), 0u);
  EXPECT_EQ(model.frame_stats().link_transfers, 0u);
}

TEST_F(MareySelectionTest, ALinkTintsItsDevicesAndJoinsItsTransfers) {
  MareyModel model(&names_);
  Fill(model);
  model.SetSelection({0, 2}, std::make_pair(0u, 2u));
  const DrawList& list = model.Draw();
  ASSERT_EQ(model.Rows().size(), 4u);
  // The two devices' rows are tinted, and only theirs.
  std::set<uint32_t> tinted;
  for (const FilledRect& r : list.backgrounds) {
    if (r.fill != kSelectTintColor) continue;
    for (const MareyRow& row : model.Rows()) {
      if (row.axis_y > r.rect.y && row.axis_y < r.rect.y + r.rect.h) tinted.insert(row.rank);
    }
  }
  EXPECT_EQ(tinted, (std::set<uint32_t>{0, 2}));
  // Four transfers' ends outlined (two each way), none of the 1 -> 3 link.
  EXPECT_EQ(Count(list.overlay_rects, 0, kSelectColor), 4u);
  // Each send joined to its receive: from the send's start on its row to
  // the receive's end on the other's, across rank 1's row.
  EXPECT_EQ(model.frame_stats().link_transfers, 2u);
  std::vector<Line> joins;
  for (const Line& line : list.lines) {
    if (line.color == kSelectColor) joins.push_back(line);
  }
  ASSERT_EQ(joins.size(), 2u);
  const MareyRow* row0 = &model.Rows()[0];
  const MareyRow* row2 = &model.Rows()[2];
  ASSERT_EQ(row0->rank, 0u);
  ASSERT_EQ(row2->rank, 2u);
  bool forward = false, backward = false;
  for (const Line& line : joins) {
    if (std::abs(line.a.y - row0->axis_y) < 0.5f && std::abs(line.b.y - row2->axis_y) < 0.5f) {
      forward = true;
      EXPECT_NEAR(line.a.x, model.TimeToX(1000), 0.5);
      EXPECT_NEAR(line.b.x, model.TimeToX(1800), 0.5);
    }
    if (std::abs(line.a.y - row2->axis_y) < 0.5f && std::abs(line.b.y - row0->axis_y) < 0.5f) {
      backward = true;
      EXPECT_NEAR(line.a.x, model.TimeToX(3000), 0.5);
      EXPECT_NEAR(line.b.x, model.TimeToX(3600), 0.5);
    }
  }
  EXPECT_TRUE(forward);
  EXPECT_TRUE(backward);
  // Their labels are blue.
  size_t blue_labels = 0;
  for (const Text& t : list.texts) blue_labels += t.color == kSelectColor;
  EXPECT_EQ(blue_labels, 2u);
}

TEST_F(MareySelectionTest, DevicesWithoutALinkAreTintedWithNoTransferOutlined) {
  MareyModel model(&names_);
  Fill(model);
  model.SetSelection({1, 3}, std::nullopt);
  const DrawList& list = model.Draw();
  EXPECT_EQ(Count(list.backgrounds, kSelectTintColor, 0), 2u);
  EXPECT_EQ(Count(list.overlay_rects, 0, kSelectColor), 0u);
  EXPECT_EQ(model.frame_stats().link_transfers, 0u);
  // Clearing the selection redraws without it.
  const uint64_t version = model.version();
  model.SetSelection({}, std::nullopt);
  EXPECT_NE(model.version(), version);
  EXPECT_EQ(Count(model.Draw().backgrounds, kSelectTintColor, 0), 0u);
}

}  // namespace
}  // namespace trainscope::viewer

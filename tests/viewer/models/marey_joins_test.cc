#include "trainscope/viewer/marey_joins.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

MareyJoins::RowItems Items(std::vector<MareyJoins::RowItems::Item> items) {
  MareyJoins::RowItems row;
  row.items = std::move(items);
  return row;
}

TEST(MareyJoinsTest, TheSameKeyIsJoinedFromItsUpperToItsLowerExtent) {
  const auto upper = Items({{7, 10, 20, OpClass::kCompute}, {8, 30, 40, OpClass::kCompute}});
  const auto lower = Items({{7, 12, 25, OpClass::kCompute}, {9, 30, 40, OpClass::kCompute}});
  DrawList list;
  EXPECT_EQ(MareyJoins::Add(upper, lower, 100, 150, {}, &list), 1u);
  ASSERT_EQ(list.quads.size(), 1u);
  const Quad& q = list.quads[0];
  EXPECT_FLOAT_EQ(q.p[0].x, 10);
  EXPECT_FLOAT_EQ(q.p[1].x, 20);
  EXPECT_FLOAT_EQ(q.p[2].x, 25);
  EXPECT_FLOAT_EQ(q.p[3].x, 12);
  EXPECT_FLOAT_EQ(q.p[0].y, 100);
  EXPECT_FLOAT_EQ(q.p[2].y, 150);
  // No room between the bands: nothing.
  DrawList none;
  EXPECT_EQ(MareyJoins::Add(upper, lower, 100, 101, {}, &none), 0u);
}

TEST(MareyJoinsTest, AcrossStagesOnlySendsAndReceivesJoin) {
  const auto upper = Items({{1, 0, 5, OpClass::kCompute}, {2, 10, 15, OpClass::kSend}});
  const auto lower = Items({{1, 0, 5, OpClass::kCompute}, {2, 20, 25, OpClass::kRecv}});
  DrawList list;
  EXPECT_EQ(MareyJoins::Add(upper, lower, 0, 50, {.same_stage = false}, &list), 1u);
  EXPECT_FLOAT_EQ(list.quads[0].p[0].x, 10);
}

TEST(MareyJoinsTest, AcrossStreamsOnlyNcclKernelsJoin) {
  const auto upper = Items({{1, 0, 5, OpClass::kGpuKernel}, {2, 10, 15, OpClass::kGpuCollective}});
  const auto lower = Items({{1, 0, 5, OpClass::kGpuKernel}, {2, 10, 15, OpClass::kGpuCollective}});
  DrawList list;
  EXPECT_EQ(MareyJoins::Add(upper, lower, 0, 50, {.collectives_only = true}, &list), 1u);
  EXPECT_EQ(list.quads[0].fill & 0xFFFFFF, kCollectiveColor & 0xFFFFFF);
}

TEST(MareyJoinsTest, MergedBinsJoinBinToBinOnlyBetweenAdjacentRowsUnsmoothed) {
  MareyJoins::RowItems upper, lower;
  upper.merged = {{0, 10}, {10, 20}, {0, -1}};
  lower.merged = {{1, 9}, {0, -1}, {20, 30}};
  DrawList list;
  EXPECT_EQ(MareyJoins::Add(upper, lower, 0, 50, {}, &list), 1u);  // only bin 0 on both
  EXPECT_FALSE(list.quads[0].smooth);
  EXPECT_FLOAT_EQ(list.quads[0].p[3].x, 1);
  DrawList apart;
  EXPECT_EQ(MareyJoins::Add(upper, lower, 0, 50, {.merged_bins = false}, &apart), 0u);
}

}  // namespace
}  // namespace trainscope::viewer

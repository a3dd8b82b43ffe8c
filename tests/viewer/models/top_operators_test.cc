#include "trainscope/viewer/top_operators.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/range_stats_fixture.h"

namespace trainscope::viewer {
namespace {

using TopOperatorsTest = RangeStatsFixture;

std::vector<std::string> Names(const TopOperators& top) {
  std::vector<std::string> names;
  for (const TopOperators::Row& row : top.rows()) names.push_back(row.name);
  return names;
}

TEST_F(TopOperatorsTest, AggregatesTheRangesOperatorsByNameWithSelfTimeAndQuantiles) {
  TopOperators top;
  top.Compute(store_, names_, StepSpan{2, 3}, /*range_device_ns=*/400);
  // Sorted by self time, largest first (the default).
  ASSERT_EQ(Names(top), (std::vector<std::string>{"B", "C", "K", "D"}));
  const TopOperators::Row& b = top.rows()[0];
  EXPECT_EQ(b.op_class, OpClass::kCompute);
  EXPECT_EQ(b.calls, 3u);
  EXPECT_EQ(b.ranks, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(b.total_ns, 80 + 80 + 90);
  // Minus their children C: 80 - (20 + 10), 80 - 50, 90 - 20.
  EXPECT_EQ(b.self_ns, 50 + 30 + 70);
  EXPECT_DOUBLE_EQ(b.mean_ns, 250.0 / 3);
  EXPECT_DOUBLE_EQ(b.p50_ns, 80);
  EXPECT_DOUBLE_EQ(b.p95_ns, 89);  // {80, 80, 90} at 1.9: 80 + 0.9 * 10
  EXPECT_DOUBLE_EQ(b.share, 150.0 / 400);
  const TopOperators::Row& c = top.rows()[1];
  EXPECT_EQ(c.calls, 5u);
  EXPECT_EQ(c.total_ns, 20 + 10 + 50 + 20 + 10);
  EXPECT_EQ(c.self_ns, c.total_ns);  // leaves
  EXPECT_DOUBLE_EQ(c.mean_ns, 22);
  EXPECT_DOUBLE_EQ(c.p50_ns, 20);  // {10, 10, 20, 20, 50}
  EXPECT_DOUBLE_EQ(c.p95_ns, 44);  // at 3.8: 20 + 0.8 * 30
  const TopOperators::Row& k = top.rows()[2];
  EXPECT_EQ(k.op_class, OpClass::kGpuKernel);
  EXPECT_EQ(k.calls, 3u);
  EXPECT_EQ(k.ranks, (std::vector<uint32_t>{1}));
  EXPECT_EQ(k.total_ns, 60);
  EXPECT_EQ(k.self_ns, 60);
  // D starts where B ends: not its child.
  const TopOperators::Row& d = top.rows()[3];
  EXPECT_EQ(d.op_class, OpClass::kCollective);
  EXPECT_EQ(d.self_ns, 10);
  // Shares of self time add up to what the rows' self times cover.
  double shares = 0;
  for (const TopOperators::Row& row : top.rows()) shares += row.share;
  EXPECT_DOUBLE_EQ(shares, (150.0 + 110 + 60 + 10) / 400);
}

TEST_F(TopOperatorsTest, NoRangeAggregatesEveryOperatorOfTheJob) {
  TopOperators top;
  top.Compute(store_, names_, std::nullopt, /*range_device_ns=*/0);
  ASSERT_EQ(top.rows().size(), 5u);
  const int a = top.Find(a_);
  ASSERT_GE(a, 0);
  EXPECT_EQ(top.rows()[a].calls, 1u);
  EXPECT_EQ(top.rows()[a].total_ns, 50);
  EXPECT_EQ(top.rows()[a].share, 0);  // no device time to compare with
  EXPECT_EQ(top.Find(names_.Intern("never seen")), -1);
}

TEST_F(TopOperatorsTest, SortsByAnyColumnEitherWayWithTiesByName) {
  TopOperators top;
  top.Compute(store_, names_, StepSpan{2, 3}, 400);
  top.SortBy(TopOperators::Column::kCalls, /*descending=*/true);
  // C 5 calls; B and K 3 each (by name); D 1.
  EXPECT_EQ(Names(top), (std::vector<std::string>{"C", "B", "K", "D"}));
  top.SortBy(TopOperators::Column::kCalls, /*descending=*/false);
  EXPECT_EQ(Names(top), (std::vector<std::string>{"D", "B", "K", "C"}));
  top.SortBy(TopOperators::Column::kName, false);
  EXPECT_EQ(Names(top), (std::vector<std::string>{"B", "C", "D", "K"}));
  top.SortBy(TopOperators::Column::kP95, true);
  EXPECT_EQ(Names(top), (std::vector<std::string>{"B", "C", "K", "D"}));
  top.SortBy(TopOperators::Column::kTotal, true);
  EXPECT_EQ(Names(top), (std::vector<std::string>{"B", "C", "K", "D"}));
  EXPECT_EQ(top.sort_column(), TopOperators::Column::kTotal);
  // A new range keeps the chosen order.
  top.Compute(store_, names_, StepSpan{3, 3}, 200);
  EXPECT_EQ(Names(top), (std::vector<std::string>{"B", "C", "K", "D"}));
}

TEST(TopOperatorsSelfTimeTest, ChildrenCountOnceAndOnlyWhenWhollyInside) {
  auto op = [](int64_t start, int64_t end) {
    MareyTrack::Op o;
    o.start = start;
    o.end = end;
    return o;
  };
  // P holds X and Y, which overlap each other (two threads on one row): P's
  // children cover [10, 70], 60 ns. Q and R only overlap: neither is the
  // other's child. S and T are equal: the first one holds the second.
  const std::vector<MareyTrack::Op> ops = {op(0, 100),   op(30, 70),   op(10, 50),   op(200, 250),
                                           op(240, 290), op(400, 420), op(400, 420), op(405, 410)};
  std::vector<const MareyTrack::Op*> pointers;
  for (const MareyTrack::Op& o : ops) pointers.push_back(&o);
  EXPECT_EQ(TopOperators::SelfTimes(pointers),
            (std::vector<int64_t>{40, 40, 40, 50, 50, 0, 15, 5}));
}

}  // namespace
}  // namespace trainscope::viewer

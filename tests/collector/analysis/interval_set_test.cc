#include "trainscope/collector/analysis/interval_set.h"

#include <vector>

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

std::vector<std::pair<int64_t, int64_t>> Pairs(const IntervalSet& s) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const IntervalSet::Interval& iv : s.intervals()) out.emplace_back(iv.start, iv.end);
  return out;
}

IntervalSet Of(std::initializer_list<std::pair<int64_t, int64_t>> ivs) {
  IntervalSet s;
  for (const auto& [a, b] : ivs) s.Add(a, b);
  s.Normalize();
  return s;
}

TEST(IntervalSetTest, NormalizeMergesOverlappingAndTouchingIntervalsInAnyOrder) {
  IntervalSet s = Of({{50, 60}, {0, 10}, {5, 20}, {20, 30}, {40, 45}, {7, 8}, {3, 3}});
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(Pairs(s), (std::vector<P>{{0, 30}, {40, 45}, {50, 60}}));
  EXPECT_EQ(s.Length(), 45);
}

TEST(IntervalSetTest, IntersectKeepsWhatBothCover) {
  const IntervalSet a = Of({{0, 10}, {20, 30}, {40, 50}});
  const IntervalSet b = Of({{5, 25}, {28, 45}});
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(Pairs(a.Intersect(b)), (std::vector<P>{{5, 10}, {20, 25}, {28, 30}, {40, 45}}));
  EXPECT_EQ(Pairs(b.Intersect(a)), Pairs(a.Intersect(b)));
  EXPECT_TRUE(a.Intersect(IntervalSet()).empty());
}

TEST(IntervalSetTest, MinusCutsHolesAndKeepsTheRest) {
  const IntervalSet window = IntervalSet::Window(0, 100);
  const IntervalSet busy = Of({{-5, 10}, {20, 30}, {25, 40}, {90, 120}});
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(Pairs(window.Minus(busy)), (std::vector<P>{{10, 20}, {40, 90}}));
  EXPECT_EQ(window.Minus(busy).Length() + window.Intersect(busy).Length(), 100);
  EXPECT_EQ(Pairs(window.Minus(IntervalSet())), (std::vector<P>{{0, 100}}));
  EXPECT_TRUE(IntervalSet::Window(5, 5).empty());
}

TEST(IntervalSetTest, ClipKeepsTheWindowOnly) {
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(Pairs(Of({{0, 10}, {20, 30}}).Clip(5, 25)), (std::vector<P>{{5, 10}, {20, 25}}));
}

TEST(IntervalSetTest, CoarsenClosesTheSmallestGapsFirst) {
  IntervalSet s = Of({{0, 10}, {11, 20}, {30, 40}, {100, 110}, {112, 120}});
  s.Coarsen(3);
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(Pairs(s), (std::vector<P>{{0, 20}, {30, 40}, {100, 120}}));
  s.Coarsen(1);
  EXPECT_EQ(Pairs(s), (std::vector<P>{{0, 120}}));
}

}  // namespace
}  // namespace trainscope::collector

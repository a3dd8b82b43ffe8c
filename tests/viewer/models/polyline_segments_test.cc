#include "trainscope/viewer/polyline_segments.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainscope::viewer {
namespace {

float Length(const PolylineSegments::Segment& s) {
  return std::hypot(s.b.x - s.a.x, s.b.y - s.a.y);
}

TEST(PolylineSegmentsTest, SolidJoinsConsecutivePointsAndSkipsRepeats) {
  const std::vector<PointF> points = {{0, 0}, {10, 0}, {10, 0}, {10, 5}};
  const auto segments = PolylineSegments::Solid(points);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_FLOAT_EQ(segments[0].a.x, 0);
  EXPECT_FLOAT_EQ(segments[0].b.x, 10);
  EXPECT_FLOAT_EQ(segments[1].a.y, 0);
  EXPECT_FLOAT_EQ(segments[1].b.y, 5);
  EXPECT_TRUE(PolylineSegments::Solid({}).empty());
  EXPECT_TRUE(PolylineSegments::Solid({{3, 3}}).empty());
}

TEST(PolylineSegmentsTest, DashesFollowThePatternAlongOneSegment) {
  // 0..20 with dash 3, gap 2: dashes at 0-3, 5-8, 10-13, 15-18.
  const auto dashes = PolylineSegments::Dashed({{0, 0}, {20, 0}}, 3, 2);
  ASSERT_EQ(dashes.size(), 4u);
  for (size_t i = 0; i < dashes.size(); ++i) {
    EXPECT_FLOAT_EQ(dashes[i].a.x, 5.0f * i);
    EXPECT_FLOAT_EQ(dashes[i].b.x, 5.0f * i + 3);
    EXPECT_FLOAT_EQ(dashes[i].a.y, 0);
  }
}

TEST(PolylineSegmentsTest, ThePatternRunsOnAcrossVertices) {
  // Short zig-zag steps (as a chart of many steps draws): the dashes must
  // not restart at each vertex, or a dashed line of 2-px steps is solid.
  std::vector<PointF> points;
  for (int i = 0; i <= 40; ++i) points.push_back({static_cast<float>(i), i % 2 == 0 ? 0.0f : 1.0f});
  const float total = 40 * std::sqrt(2.0f);
  const auto dashes = PolylineSegments::Dashed(points, 4, 4);
  float drawn = 0;
  for (const auto& s : dashes) drawn += Length(s);
  // Half the line is drawn (within one dash), not all of it.
  EXPECT_NEAR(drawn, total / 2, 4.0f);
  // A dash around a vertex is two pieces that meet there.
  const auto around = PolylineSegments::Dashed({{0, 0}, {2, 0}, {2, 10}}, 4, 1);
  ASSERT_GE(around.size(), 2u);
  EXPECT_FLOAT_EQ(around[0].b.x, 2);
  EXPECT_FLOAT_EQ(around[1].a.x, 2);
  EXPECT_FLOAT_EQ(around[1].a.y, 0);
  EXPECT_FLOAT_EQ(around[1].b.y, 2);  // the rest of the 4-long dash
  EXPECT_FLOAT_EQ(around[2].a.y, 3);  // after the 1-long gap
}

TEST(PolylineSegmentsTest, AChartOfManyStepsEndsWithAHalfDrawnLine) {
  // The overview's wait line: 2,400 jittered points over 1,100 px, dashes
  // 6 px long (a 2-px pen). Rounding must neither stall nor skip the pattern.
  std::vector<PointF> points;
  float total = 0;
  uint32_t seed = 7;
  for (int i = 0; i < 2400; ++i) {
    seed = seed * 1664525u + 1013904223u;
    points.push_back({100.0f + i * 1100.0f / 2400, 300.0f - static_cast<float>(seed >> 24) * 0.9f});
    if (i > 0) {
      total += std::hypot(points[i].x - points[i - 1].x, points[i].y - points[i - 1].y);
    }
  }
  const auto dashes = PolylineSegments::Dashed(points, 6, 6);
  float drawn = 0;
  for (const auto& s : dashes) drawn += Length(s);
  EXPECT_NEAR(drawn / total, 0.5f, 0.01f);
  EXPECT_LT(dashes.size(), points.size() + static_cast<size_t>(total / 12) + 2);
}

TEST(PolylineSegmentsTest, NoPatternIsSolid) {
  const std::vector<PointF> points = {{0, 0}, {10, 0}, {10, 10}};
  EXPECT_EQ(PolylineSegments::Dashed(points, 0, 2).size(), 2u);
  EXPECT_EQ(PolylineSegments::Dashed(points, 3, 0).size(), 2u);
  EXPECT_EQ(PolylineSegments::Dashed(points, 1e-6f, 2).size(), 2u);
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/hilbert_ring_geometry.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trainscope/viewer/cluster_geometry.h"

namespace trainscope::viewer {
namespace {

using Where = HilbertRingGeometry::Where;

TEST(HilbertRingGeometryTest, TheRingFillsTheViewportBelowTheTitle) {
  const HilbertRingGeometry ring(1000, 1040, 8);
  EXPECT_FLOAT_EQ(ring.centre().x, 500);
  EXPECT_FLOAT_EQ(ring.centre().y, 40 + 500);
  // Half the square below the title, less the marks, two tracks and room
  // for the block names.
  EXPECT_FLOAT_EQ(ring.radius(), 500 - 16 - 2 * (12 + 3) - 60);
  EXPECT_DOUBLE_EQ(ring.step(), 2 * kPi / 8);
  // A tiny viewport still gets a ring one can see.
  EXPECT_FLOAT_EQ(HilbertRingGeometry(100, 100, 8).radius(), 30);
}

TEST(HilbertRingGeometryTest, PositionsRunClockwiseFromTwelve) {
  const HilbertRingGeometry ring(1000, 1040, 4);
  const PointF c = ring.centre();
  const PointF first = ring.DevicePoint(0), second = ring.DevicePoint(1);
  // Position 0 is right of 12 o'clock, above the centre; position 1 below.
  EXPECT_GT(first.x, c.x);
  EXPECT_LT(first.y, c.y);
  EXPECT_GT(second.x, c.x);
  EXPECT_GT(second.y, c.y);
  EXPECT_NEAR(std::hypot(first.x - c.x, first.y - c.y), ring.radius() + 8, 0.01);
  for (size_t p = 0; p < 4; ++p) {
    const PointF d = ring.DevicePoint(p);
    EXPECT_EQ(ring.PositionAt(d.x, d.y), p);
    EXPECT_EQ(ring.WhereIs(d.x, d.y), Where::kMarks);
  }
}

TEST(HilbertRingGeometryTest, BandsFromTheMarksOutward) {
  const HilbertRingGeometry ring(1000, 1040, 16);
  const PointF c = ring.centre();
  auto where_at = [&](float r) { return ring.WhereIs(c.x, c.y - r); };  // at 12 o'clock
  const float r = ring.radius();
  EXPECT_EQ(where_at(r - 3), Where::kNone);
  EXPECT_EQ(where_at(r - 1), Where::kMarks);  // a 2-pixel margin
  EXPECT_EQ(where_at(r + 17), Where::kMarks);
  EXPECT_FLOAT_EQ(ring.host_track().r0, r + 16 + 3);
  EXPECT_FLOAT_EQ(ring.host_track().r1, r + 16 + 3 + 12);
  EXPECT_FLOAT_EQ(ring.rack_track().r0, ring.host_track().r1 + 3);
  EXPECT_FLOAT_EQ(ring.rack_track().r1, ring.rack_track().r0 + 12);
  EXPECT_EQ(where_at(ring.host_track().r0 + 6), Where::kHostTrack);
  EXPECT_EQ(where_at(ring.rack_track().r0 + 6), Where::kRackTrack);
  EXPECT_EQ(where_at(ring.rack_track().r1 + 5), Where::kNone);
  EXPECT_EQ(HilbertRingGeometry().WhereIs(0, 0), Where::kNone);  // no ring
}

TEST(HilbertRingGeometryTest, AnchorsLieJustInsideTheRing) {
  const HilbertRingGeometry ring(800, 840, 10);
  const PointF c = ring.centre(), a = ring.Anchor(kPi / 2);  // 3 o'clock
  EXPECT_NEAR(a.x - c.x, ring.radius() - 2, 0.01);
  EXPECT_NEAR(a.y, c.y, 0.01);
}

}  // namespace
}  // namespace trainscope::viewer

#include "trainscope/viewer/hilbert_ring_geometry.h"

#include <algorithm>
#include <cmath>

#include "trainscope/viewer/cluster_geometry.h"

namespace trainscope::viewer {

HilbertRingGeometry::HilbertRingGeometry(float width, float height, size_t positions)
    : centre_{width / 2, kTop + (height - kTop) / 2},
      // Room outside the tracks for the block names.
      radius_(std::max(30.0f,
                       std::min(width, height - kTop) / 2 - kMark - 2 * (kTrack + kTrackGap) - 60)),
      positions_(positions),
      step_(2 * kPi / static_cast<double>(positions)),
      host_r0_(radius_ + kMark + kTrackGap),
      rack_r0_(host_r0_ + kTrack + kTrackGap) {}

PointF HilbertRingGeometry::DevicePoint(size_t position) const {
  return OnCircle(centre_, radius_ + kMark / 2, AngleOf(position));
}

PointF HilbertRingGeometry::Anchor(double angle) const {
  return OnCircle(centre_, radius_ - 2, angle);
}

HilbertRingGeometry::Where HilbertRingGeometry::WhereIs(float x, float y) const {
  if (positions_ == 0) return Where::kNone;
  const float d = std::hypot(x - centre_.x, y - centre_.y);
  if (d >= radius_ - 2 && d <= radius_ + kMark + 2) return Where::kMarks;
  if (d >= host_r0_ && d <= host_r0_ + kTrack) return Where::kHostTrack;
  if (d >= rack_r0_ && d <= rack_r0_ + kTrack) return Where::kRackTrack;
  return Where::kNone;
}

size_t HilbertRingGeometry::PositionAt(float x, float y) const {
  double a = std::atan2(x - centre_.x, -(y - centre_.y));
  if (a < 0) a += 2 * kPi;
  return std::min(positions_ - 1,
                  static_cast<size_t>(a / (2 * kPi) * static_cast<double>(positions_)));
}

}  // namespace trainscope::viewer

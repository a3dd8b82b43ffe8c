// Where the Hilbert ring's parts lie in a viewport (issue 24.4): the ring's
// centre and radius, each ring position's angle (clockwise from 12 o'clock),
// the device marks' band and the host and rack address tracks outside it,
// and which position and band a point falls on. One copy of the ring's
// measures, so that drawing and hit testing cannot disagree.
//
// Usage:
//   HilbertRingGeometry ring(1000, 1000, /*positions=*/64);
//   PointF p = ring.DevicePoint(3);
//   if (ring.BandAt(x, y) == HilbertRingGeometry::Band::kHostTrack)
//     size_t pos = ring.PositionAt(x, y);
//
// Threading: an immutable value; safe to share once built.
#ifndef TRAINSCOPE_VIEWER_HILBERT_RING_GEOMETRY_H_
#define TRAINSCOPE_VIEWER_HILBERT_RING_GEOMETRY_H_

#include <cstddef>

#include "trainscope/viewer/draw_list.h"

namespace trainscope::viewer {

class HilbertRingGeometry {
 public:
  static constexpr float kTop = 40;      // above the ring: the title, the back button
  static constexpr float kMark = 16;     // device marks' radial length
  static constexpr float kTrack = 12;    // each address track
  static constexpr float kTrackGap = 3;  // between the marks and the tracks

  // Radii of one band of the ring, inner first.
  struct Band {
    float r0 = 0, r1 = 0;
  };
  enum class Where { kNone, kMarks, kHostTrack, kRackTrack };

  HilbertRingGeometry() = default;
  // A ring of `positions` (> 0) in a width x height viewport.
  HilbertRingGeometry(float width, float height, size_t positions);

  PointF centre() const { return centre_; }
  float radius() const { return radius_; }  // the marks' inner edge
  size_t positions() const { return positions_; }
  double step() const { return step_; }  // radians per position

  // The middle of a position's arc.
  double AngleOf(size_t position) const { return (static_cast<double>(position) + 0.5) * step_; }
  // The middle of a position's mark.
  PointF DevicePoint(size_t position) const;
  // On the ring's inner edge at an angle: where edges leave the ring.
  PointF Anchor(double angle) const;
  Band host_track() const { return {host_r0_, host_r0_ + kTrack}; }
  Band rack_track() const { return {rack_r0_, rack_r0_ + kTrack}; }

  // The band under a point (the marks with a 2-pixel margin).
  Where WhereIs(float x, float y) const;
  // The position whose arc holds the point's angle (any radius).
  size_t PositionAt(float x, float y) const;

 private:
  PointF centre_;
  float radius_ = 0;
  size_t positions_ = 0;
  double step_ = 0;
  float host_r0_ = 0, rack_r0_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_HILBERT_RING_GEOMETRY_H_

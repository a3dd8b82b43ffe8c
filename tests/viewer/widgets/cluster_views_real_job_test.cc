// The cluster views on a real stored job: tests/python/test_cluster_views.py
// runs the pipeline example (4 ranks, gloo) with --slow-link 0:2 and points
// this test at its log (TRAINSCOPE_REAL_JOB_DATA_DIR, TRAINSCOPE_REAL_JOB);
// without them it is skipped. The injected delay holds rank 0's sends back
// in user space, so the collector names rank 0 (straggler / collective_wait
// alerts), not the link; the views must show that: rank 0 outlined red in
// the topology and red on the Hilbert ring, and the link 0 -> 2 drawn with
// its counted send/recv traffic.
#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <cmath>
#include <cstdlib>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/stored_job_loader.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

TEST(ClusterViewsRealJobTest, TheNamedRankAndTheSlowPairShowInEveryView) {
  const char* dir = std::getenv("TRAINSCOPE_REAL_JOB_DATA_DIR");
  const char* job = std::getenv("TRAINSCOPE_REAL_JOB");
  if (dir == nullptr || job == nullptr) GTEST_SKIP() << "run by tests/python/test_cluster_views.py";
  testing::EnsureApplication();
  absl::StatusOr<JobData> data = LoadStoredJob(dir, job, {});
  ASSERT_TRUE(data.ok()) << data.status();
  ViewerState state;
  state.Load(*data);
  const TrafficModel::Matrix& m = state.traffic.matrix();
  ASSERT_EQ(m.size(), 4u);
  const auto i0 = m.IndexOf(0), i2 = m.IndexOf(2);
  ASSERT_TRUE(i0 && i2);
  ASSERT_GT(m.at(*i0, *i2).bytes, 0u) << "rank 0 sends its activations to rank 2";
  EXPECT_TRUE(m.at(*i0, *i2).exact);

  // Topology: the 0-2 edge is drawn; rank 0 carries the alert outline.
  absl::StatusOr<QImage> topology = OffscreenRenderer::Render(&state, "topology", 1400, 1000, {});
  ASSERT_TRUE(topology.ok()) << topology.status();
  const size_t u0 = state.hierarchy.UnitOf(ClusterLevel::kDevice, *i0);
  const size_t u2 = state.hierarchy.UnitOf(ClusterLevel::kDevice, *i2);
  EXPECT_TRUE(state.topology.EdgeBetween(u0, u2).has_value());
  const auto& node = state.topology.nodes()[u0];
  ASSERT_TRUE(node.alert) << "the collector's alerts name rank 0";
  int red = 0;
  for (int k = 0; k < 16; ++k) {
    const PointF p = OnCircle(node.centre, node.radius, 2 * kPi * k / 16);
    const QColor c = topology->pixelColor(static_cast<int>(p.x), static_cast<int>(p.y));
    red += c.red() > 170 && c.green() < 90 && c.blue() < 90;
  }
  EXPECT_GE(red, 4) << "rank 0's outline is red";
  // Hilbert ring: one mark, rank 0's, is alert red, in the list and in
  // the pixels at its middle.
  absl::StatusOr<QImage> ring = OffscreenRenderer::Render(&state, "hilbert-ring", 1000, 1000, {});
  ASSERT_TRUE(ring.ok()) << ring.status();
  int red_marks = 0;
  for (const Quad& q : state.hilbert_ring.Draw().quads) {
    if (q.fill != kAlertColor) continue;
    ++red_marks;
    int red_pixels = 0;
    for (float t : {0.2f, 0.8f}) {
      const float x = (q.p[0].x + q.p[1].x) / 2 * (1 - t) + (q.p[2].x + q.p[3].x) / 2 * t;
      const float y = (q.p[0].y + q.p[1].y) / 2 * (1 - t) + (q.p[2].y + q.p[3].y) / 2 * t;
      const QColor c = ring->pixelColor(static_cast<int>(x), static_cast<int>(y));
      red_pixels += c.red() > 180 && c.green() < 90;
    }
    EXPECT_GE(red_pixels, 1);
  }
  EXPECT_EQ(red_marks, 1);
  // Chord (devices) and trends render with the job's traffic and steps.
  state.chord.SetLevel(ClusterLevel::kDevice);
  ASSERT_TRUE(OffscreenRenderer::Render(&state, "chord", 1000, 1000, {}).ok());
  EXPECT_FALSE(state.chord.ribbons().empty());
  ASSERT_TRUE(OffscreenRenderer::Render(&state, "trend", 1400, 800, {}).ok());
  EXPECT_GE(state.trend.frame_count(), 12u);
}

}  // namespace
}  // namespace trainscope::viewer

// The cluster views on a real stored job: tests/python/test_cluster_views.py
// runs the pipeline example (4 ranks, gloo) with --slow-link 0:2 (every
// activation from rank 0 to rank 2 arrives --delay-ms late inside rank 2's
// timed recv) and --racks rack-a,rack-a,rack-b,rack-b, and points this test
// at its log (TRAINSCOPE_REAL_JOB_DATA_DIR, TRAINSCOPE_REAL_JOB); without
// them it is skipped. The collector names the link (slow_link 0 -> 2); the
// views must show it: the heaviest cell by time in the matrix, the edge in
// the topology, its alert selecting the two ranks in the Marey graph (each
// send of the link joined to its receive), the overview and the alerts
// list; and the ranks in the racks their agents said.
#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/stored_job_loader.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

TEST(ClusterViewsRealJobTest, TheSlowLinkAndTheRacksShowInEveryView) {
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
  // The slow link is the heaviest cell by transfer time.
  for (size_t a = 0; a < m.size(); ++a) {
    for (size_t b = 0; b < m.size(); ++b) {
      if (a == *i0 && b == *i2) continue;
      EXPECT_GT(m.at(*i0, *i2).duration_ns, m.at(a, b).duration_ns)
          << "rank " << m.devices[a].rank << " -> " << m.devices[b].rank;
    }
  }

  // Racks from the agents (TRAINSCOPE_RACK per rank), all on one host.
  std::map<std::string, std::set<uint32_t>> racks;
  for (const auto& rack : state.hierarchy.units(ClusterLevel::kRack)) {
    for (size_t d : rack.devices) racks[rack.name].insert(m.devices[d].rank);
  }
  EXPECT_EQ(racks,
            (std::map<std::string, std::set<uint32_t>>{{"rack-a", {0, 1}}, {"rack-b", {2, 3}}}));

  // The collector named the link; its alert selects it in every view.
  std::optional<size_t> row;
  for (const AlertsModel::Row& r : state.alerts.Rows()) {
    const Alert* a = state.alerts.AtRow(r.index);
    if (a != nullptr && a->rule == "slow_link") row = r.index;
  }
  ASSERT_TRUE(row.has_value()) << "no slow_link alert in the stored job";
  const Alert* alert = state.SelectAlert(*row);
  ASSERT_NE(alert, nullptr);
  EXPECT_EQ(std::set<uint32_t>(alert->ranks.begin(), alert->ranks.end()),
            (std::set<uint32_t>{0, 2}));
  ASSERT_EQ(state.selection.selected_link(), std::make_pair(0u, 2u));

  // Topology: the 0-2 edge is drawn, selected (blue).
  absl::StatusOr<QImage> topology = OffscreenRenderer::Render(&state, "topology", 1400, 1000, {});
  ASSERT_TRUE(topology.ok()) << topology.status();
  const size_t u0 = state.hierarchy.UnitOf(ClusterLevel::kDevice, *i0);
  const size_t u2 = state.hierarchy.UnitOf(ClusterLevel::kDevice, *i2);
  EXPECT_TRUE(state.topology.EdgeBetween(u0, u2).has_value());
  EXPECT_TRUE(state.topology.nodes()[u0].selected);
  EXPECT_TRUE(state.topology.nodes()[u2].selected);

  // Marey: the two ranks' rows marked, the link's transfers joined.
  state.marey.ResetZoom();
  absl::StatusOr<QImage> marey = OffscreenRenderer::Render(&state, "marey", 1400, 800, {});
  ASSERT_TRUE(marey.ok()) << marey.status();
  EXPECT_GT(state.marey.frame_stats().link_transfers, 0u);
  const RectF plot = state.marey.plot_rect();
  for (const MareyRow& r : state.marey.Rows()) {
    if (r.kind != MareyRowKind::kDevice) continue;
    const QColor mark = marey->pixelColor(static_cast<int>(plot.x - 2), static_cast<int>(r.axis_y));
    const bool blue = mark.blue() > 150 && mark.red() < 90;
    EXPECT_EQ(blue, r.rank == 0 || r.rank == 2) << "rank " << r.rank;
  }
  // Overview and alerts list: the two ranks' bars, the rows naming them.
  std::set<uint32_t> bars;
  for (const auto& bar : state.overview.Bars()) {
    if (bar.selected) bars.insert(bar.rank);
  }
  EXPECT_EQ(bars, (std::set<uint32_t>{0, 2}));
  for (const AlertsModel::Row& r : state.alerts.Rows()) {
    const Alert* a = state.alerts.AtRow(r.index);
    ASSERT_NE(a, nullptr);
    bool names = false;
    for (uint32_t rank : a->ranks) names = names || rank == 0 || rank == 2;
    EXPECT_EQ(r.selected_devices, names) << r.rule;
  }

  // Chord (devices), Hilbert ring and trends render with the job's traffic and steps.
  state.chord.SetLevel(ClusterLevel::kDevice);
  ASSERT_TRUE(OffscreenRenderer::Render(&state, "chord", 1000, 1000, {}).ok());
  EXPECT_FALSE(state.chord.ribbons().empty());
  ASSERT_TRUE(OffscreenRenderer::Render(&state, "hilbert-ring", 1000, 1000, {}).ok());
  ASSERT_TRUE(OffscreenRenderer::Render(&state, "trend", 1400, 800, {}).ok());
  EXPECT_GE(state.trend.frame_count(), 12u);
}

}  // namespace
}  // namespace trainscope::viewer

// Renders the cluster views offscreen (as `--render topology|trend|chord|
// hilbert-ring` does) for a synthetic job with one slow link and checks by
// pixels that the slow link is the heaviest, darkest element, that its
// alert selects it (drawn blue), and that the window has their tabs. A
// 1,024-device job renders too, its slow link still the darkest edge.
// VIEWER_TEST_SAVE=DIR keeps the images.
#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <QTabWidget>
#include <cmath>
#include <cstdlib>
#include <map>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/cluster_view_widget.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

SyntheticJobOptions SlowLinkJob(uint32_t devices, uint32_t hosts, uint32_t racks) {
  SyntheticJobOptions options;
  options.devices = devices;
  options.hosts = hosts;
  options.racks = racks;
  options.steps = 6;
  options.straggler.reset();
  options.slow_link = std::make_pair(12u, 13u);
  if (devices > 64) {
    options.steps = 3;
    options.compute_ops_per_step = 4;
    options.collectives_per_step = 1;
  }
  return options;
}

QImage Render(ViewerState* state, const std::string& view, int w, int h, const std::string& name) {
  absl::StatusOr<QImage> image = OffscreenRenderer::Render(state, view, w, h, {});
  EXPECT_TRUE(image.ok()) << image.status();
  if (!image.ok()) return QImage();
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    image->save(QString::fromStdString(std::string(dir) + "/" + name + ".png"));
  }
  return *image;
}

QColor At(const QImage& image, PointF p) {
  return image.pixelColor(static_cast<int>(std::lround(p.x)), static_cast<int>(std::lround(p.y)));
}

bool DarkRed(QColor c) { return c.red() > 90 && c.green() < 60 && c.blue() < 60; }
bool Blue(QColor c) { return c.blue() > 150 && c.red() < 120; }
int Darkness(QColor c) { return 765 - c.red() - c.green() - c.blue(); }

size_t AlertRow(ViewerState* state, const std::string& rule) {
  for (size_t i = 0; i < state->alerts.size(); ++i) {
    const Alert* a = state->alerts.AtRow(i);
    if (a != nullptr && a->rule == rule) return i;
  }
  return SIZE_MAX;
}

TEST(ClusterViewsRenderTest, TopologyPaintsTheSlowLinkDarkestAndItsAlertBlue) {
  testing::EnsureApplication();
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob(16, 4, 2)));
  QImage image = Render(&state, "topology", 1400, 1000, "topology");
  const TrafficModel::Matrix& m = state.traffic.matrix();
  auto mid = [&](uint32_t a, uint32_t b) {
    const PointF pa = state.topology.DevicePosition(*m.IndexOf(a));
    const PointF pb = state.topology.DevicePosition(*m.IndexOf(b));
    return PointF{(pa.x + pb.x) / 2, (pa.y + pb.y) / 2};
  };
  EXPECT_TRUE(DarkRed(At(image, mid(12, 13)))) << At(image, mid(12, 13)).name().toStdString();
  // Other links of the ring: drawn, lighter.
  for (auto [a, b] : {std::pair{1u, 2u}, std::pair{5u, 6u}, std::pair{3u, 4u}}) {
    const QColor c = At(image, mid(a, b));
    EXPECT_LT(Darkness(c), Darkness(At(image, mid(12, 13))) - 150) << a << "-" << b;
    EXPECT_GT(Darkness(c), 30) << a << "-" << b << ": drawn";
  }
  // The alert selects the link: blue beside the edge.
  state.SelectAlert(AlertRow(&state, "slow_link"));
  image = Render(&state, "topology", 1400, 1000, "topology-alert");
  const PointF a = state.topology.DevicePosition(*m.IndexOf(12));
  const PointF b = state.topology.DevicePosition(*m.IndexOf(13));
  const PointF c = mid(12, 13);
  const float len = std::hypot(b.x - a.x, b.y - a.y);
  const float off = state.topology.edges().front().width / 2 + 2.5f;
  const PointF beside{c.x - (b.y - a.y) / len * off, c.y + (b.x - a.x) / len * off};
  EXPECT_TRUE(Blue(At(image, beside))) << At(image, beside).name().toStdString();
}

TEST(ClusterViewsRenderTest, ChordRibbonsAndSplitArcsShowInPixels) {
  testing::EnsureApplication();
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob(16, 4, 2)));
  state.chord.SetLevel(ClusterLevel::kDevice);
  const QImage image = Render(&state, "chord", 1400, 1000, "chord-device");
  ChordLayout& chord = state.chord;
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  const auto& slow = chord.ribbons().front();
  ASSERT_EQ(units[slow.src].name, "rank 12");
  // The slow ribbon is filled, right inside the circle at its source end.
  const QColor ribbon =
      At(image, OnCircle(chord.centre(), chord.radius() - 6, (slow.src_start + slow.src_end) / 2));
  EXPECT_GT(Darkness(ribbon), 120) << ribbon.name().toStdString();
  // Every device's arc: out in its colour, in a darker interval.
  for (const auto& arc : chord.arcs()) {
    const float r = chord.radius() + 2 + arc.thickness / 2;
    const QColor out = At(image, OnCircle(chord.centre(), r, (arc.out_start + arc.out_end) / 2));
    const QColor in = At(image, OnCircle(chord.centre(), r, (arc.in_start + arc.in_end) / 2));
    EXPECT_GT(Darkness(in), Darkness(out) + 60) << units[arc.unit].name;
  }
  // Host level: node-3 keeps the slow link inside it, the thickest arc.
  state.chord.SetLevel(ClusterLevel::kHost);
  Render(&state, "chord", 1400, 1000, "chord-host");
}

TEST(ClusterViewsRenderTest, HilbertRingAndTrendsAtAThousandDevices) {
  testing::EnsureApplication();
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob(1024, 128, 8)));
  const QImage image = Render(&state, "hilbert-ring", 1400, 1400, "hilbert-ring-1024");
  const auto& edges = state.hilbert_ring.edges();
  ASSERT_FALSE(edges.empty());
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  ASSERT_EQ(units[edges.front().a].name, "rank 12");
  const auto& path = edges.front().path;
  EXPECT_TRUE(DarkRed(At(image, path[path.size() / 4])))
      << At(image, path[path.size() / 4]).name().toStdString();
  // The topology at the rack level: 8 racks, the ring's rack-to-rack links.
  state.topology.SetLevel(ClusterLevel::kRack);
  Render(&state, "topology", 1400, 1000, "topology-1024-racks");
  EXPECT_EQ(state.topology.nodes().size(), 8u);
  // Trends by host with a marked frame: its dot is red.
  state.trend.SetLevel(ClusterLevel::kHost);
  const QImage trend = Render(&state, "trend", 1600, 900, "trend-1024-hosts");
  ASSERT_FALSE(state.trend.rows().empty());
  const PointF dot = state.trend.ValuePoint(0, UnitTrendModel::kStepTime, state.trend.frame());
  const QColor c = At(trend, dot);
  EXPECT_GT(c.red(), 150) << c.name().toStdString();
  EXPECT_LT(c.green(), 100) << c.name().toStdString();
}

TEST(ClusterViewsRenderTest, TheWindowHasLinkedClusterTabs) {
  testing::EnsureApplication();
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob(16, 4, 2)));
  MainWindow window(&state, nullptr, {});
  QTabWidget* tabs = window.findChild<QTabWidget*>();
  ASSERT_NE(tabs, nullptr);
  std::vector<std::string> names;
  for (int i = 0; i < tabs->count(); ++i) names.push_back(tabs->tabText(i).toStdString());
  for (const char* want : {"Topology", "Trends", "Chord", "Hilbert ring"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  const auto views = window.findChildren<ClusterViewWidget*>();
  EXPECT_EQ(views.size(), 4);
  // A click on the slow edge in the topology tab selects the link everywhere.
  ClusterViewWidget* topology = nullptr;
  for (ClusterViewWidget* v : views)
    if (v->view() == &state.topology) topology = v;
  ASSERT_NE(topology, nullptr);
  topology->resize(1200, 900);
  state.topology.SetViewport(1200, 900);
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const PointF a = state.topology.DevicePosition(*m.IndexOf(12));
  const PointF b = state.topology.DevicePosition(*m.IndexOf(13));
  ASSERT_TRUE(state.topology.ClickAt((a.x + b.x) / 2, (a.y + b.y) / 2));
  state.SyncSelection();
  EXPECT_EQ(state.selection.selected_link(), std::make_pair(12u, 13u));
  bool chord_selected = false;
  state.chord.SetLevel(ClusterLevel::kDevice);
  for (const auto& r : state.chord.ribbons()) chord_selected = chord_selected || r.selected;
  EXPECT_TRUE(chord_selected);
  bool ring_selected = false;
  for (const auto& e : state.hilbert_ring.edges()) ring_selected = ring_selected || e.selected;
  EXPECT_TRUE(ring_selected);
}

// 1,024 devices on 128 hosts: the arcs are drawn (each wide enough to hold
// a pixel is not background) and the heaviest ribbon (the slow link, drawn
// alone and outlined dark red on top) is visible along its outline.
TEST(ClusterViewsRenderTest, ChordAtAThousandDevicesShowsItsArcsAndHeaviestRibbon) {
  testing::EnsureApplication();
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob(1024, 128, 8)));
  state.chord.SetLevel(ClusterLevel::kDevice);
  const QImage image = Render(&state, "chord", 1400, 1400, "chord-1024");
  ChordLayout& chord = state.chord;
  ASSERT_EQ(chord.arcs().size(), 1024u);
  size_t wide = 0, drawn = 0;
  for (const auto& arc : chord.arcs()) {
    const float r = chord.radius() + 2 + arc.thickness / 2;
    if ((arc.in_end - arc.out_start) * r < 2) continue;
    ++wide;
    const QColor c = At(image, OnCircle(chord.centre(), r, (arc.out_start + arc.in_end) / 2));
    drawn += Darkness(c) > 40;
  }
  EXPECT_GT(wide, 900u);
  EXPECT_GE(drawn, wide * 95 / 100) << drawn << " of " << wide;
  // The heaviest ribbon: rank 12 -> 13, its outline dark red where it runs.
  const auto& units = state.hierarchy.units(ClusterLevel::kDevice);
  const auto& heaviest = chord.ribbons().front();
  ASSERT_EQ(units[heaviest.src].name, "rank 12");
  ASSERT_EQ(units[heaviest.dst].name, "rank 13");
  ASSERT_FALSE(heaviest.polygon.empty());
  size_t outlined = 0;
  for (const PointF& p : heaviest.polygon) {
    bool red = false;
    for (int dx = -2; dx <= 2 && !red; ++dx)
      for (int dy = -2; dy <= 2 && !red; ++dy)
        red = DarkRed(At(image, {p.x + static_cast<float>(dx), p.y + static_cast<float>(dy)}));
    outlined += red;
  }
  EXPECT_GE(outlined, heaviest.polygon.size() * 8 / 10)
      << outlined << " of " << heaviest.polygon.size() << " outline points dark red";
  // Inside it, its fill (no lighter bundle painted over it).
  const QColor fill = At(image, OnCircle(chord.centre(), chord.radius() - 8,
                                         (heaviest.src_start + heaviest.src_end) / 2));
  EXPECT_GT(Darkness(fill), 120) << fill.name().toStdString();
}

// A filtered, then zoomed Hilbert ring at 1,024 devices on a 32 x 32 mesh:
// only the rack's devices are marked, each still coloured.
TEST(ClusterViewsRenderTest, HilbertRingFilteredAndZoomed) {
  testing::EnsureApplication();
  ViewerState state;
  state.Load(GenerateSyntheticJob(SlowLinkJob(1024, 128, 8)));
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> mesh;
  for (uint32_t r = 0; r < 1024; ++r) mesh[r] = {r % 32, r / 32};
  HilbertRingLayout& ring = state.hilbert_ring;
  ring.SetCoordinates(mesh);
  ASSERT_TRUE(ring.SetFilterText("rack=rack-0,rack-1 x=0-15").ok());
  QImage image = Render(&state, "hilbert-ring", 1400, 1400, "hilbert-ring-1024-filtered");
  EXPECT_EQ(ring.ring_order().size(), 128u);
  ring.ZoomInto({ClusterLevel::kRack, 0});
  image = Render(&state, "hilbert-ring", 1400, 1400, "hilbert-ring-1024-zoomed");
  ASSERT_EQ(ring.ring_order().size(), 64u);
  const TrafficModel::Matrix& m = state.traffic.matrix();
  for (size_t d : ring.ring_order()) {
    const QColor c = At(image, ring.DevicePoint(d));
    EXPECT_GT(Darkness(c), 60) << m.devices[d].rank << " " << c.name().toStdString();
  }
  // The slow link 12 -> 13 lies inside: the heaviest edge, dark red.
  const auto& path = ring.edges().front().path;
  EXPECT_TRUE(DarkRed(At(image, path[path.size() / 2])))
      << At(image, path[path.size() / 2]).name().toStdString();
}

}  // namespace
}  // namespace trainscope::viewer

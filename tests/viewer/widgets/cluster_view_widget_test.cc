// ClusterViewWidget's gestures and animation, driven by real Qt events on
// an offscreen widget: a new chord layout animates from the old one to the
// new (started at the old, ended at the new, within a wide deadline); a
// click on a Hilbert ring block zooms in and Esc backs out; the ring's
// filter box applies a filter or, refused, keeps the old one and says why.
#include "trainscope/viewer/widgets/cluster_view_widget.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMouseEvent>
#include <cmath>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

PairTrafficRecord Pair(uint32_t src, uint32_t dst, int64_t ns) {
  PairTrafficRecord t;
  t.src_rank = src;
  t.dst_rank = dst;
  t.bytes = 100;
  t.duration_ns = ns;
  t.messages = 1;
  return t;
}

// 64 devices on 8 hosts (node-0 to node-7) in 2 racks.
void Load64Devices(ViewerState* state) {
  SyntheticJobOptions options;
  options.devices = 64;
  options.hosts = 8;
  options.racks = 2;
  options.steps = 2;
  options.straggler.reset();
  state->Load(GenerateSyntheticJob(options));
}

TEST(ClusterViewWidgetTest, ANewChordLayoutAnimatesFromTheOldOne) {
  testing::EnsureApplication();
  TrafficModel traffic;
  traffic.SetDevices({{0, 0, "a"}, {1, 0, "b"}, {2, 0, "c"}, {3, 0, "d"}});
  ClusterHierarchy hierarchy(&traffic);
  SelectionState selection;
  ChordLayout chord(&hierarchy, &selection);
  chord.SetLevel(ClusterLevel::kHost);
  for (uint64_t s = 1; s <= 2; ++s) {
    StepRecord step;
    step.step = s;
    step.traffic = s == 1 ? std::vector<PairTrafficRecord>{Pair(0, 1, 100), Pair(1, 2, 300)}
                          : std::vector<PairTrafficRecord>{Pair(0, 1, 400), Pair(2, 3, 200)};
    traffic.AddStep(step);
  }
  traffic.SetStepRange(1, 1);
  ClusterViewWidget widget(&chord);
  widget.resize(900, 800);
  widget.grab();  // the first layout: shown as it is
  EXPECT_FALSE(widget.animating());
  const double before = chord.arcs()[1].out;
  traffic.SetStepRange(2, 2);
  const double after = chord.target().arcs[1].out;
  ASSERT_NE(before, after);
  widget.grab();  // a new layout: the animation starts at the old one
  EXPECT_TRUE(widget.animating());
  EXPECT_EQ(chord.arcs()[1].out, before);
  QElapsedTimer deadline;
  deadline.start();
  while (widget.animating() && deadline.elapsed() < 10'000) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  EXPECT_FALSE(widget.animating()) << "still animating after 10 s";
  EXPECT_EQ(chord.arcs()[1].out, after);
  EXPECT_EQ(widget.filter_box(), nullptr);  // the chord has no filter
}

TEST(ClusterViewWidgetTest, RingBlocksZoomOnClickAndEscBacksOut) {
  testing::EnsureApplication();
  ViewerState state;
  Load64Devices(&state);
  HilbertRingLayout& ring = state.hilbert_ring;
  ClusterViewWidget widget(&ring);
  widget.resize(900, 900);
  widget.grab();
  // A point on the host track just outside rank 20's mark (node-2).
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const PointF mark = ring.DevicePoint(*m.IndexOf(20));
  const PointF centre{450, 470};
  const float r = std::hypot(mark.x - centre.x, mark.y - centre.y);
  const QPointF host(centre.x + (mark.x - centre.x) * (r + 17) / r,
                     centre.y + (mark.y - centre.y) * (r + 17) / r);
  QMouseEvent press(QEvent::MouseButtonPress, host, widget.mapToGlobal(host), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&widget, &press);
  ASSERT_TRUE(ring.zoom().has_value());
  EXPECT_EQ(ring.zoom()->first, ClusterLevel::kHost);
  EXPECT_EQ(ring.ring_order().size(), 8u);
  QKeyEvent escape(QEvent::KeyPress, Qt::Key_Escape, Qt::NoModifier);
  QApplication::sendEvent(&widget, &escape);
  EXPECT_FALSE(ring.zoom().has_value());
  EXPECT_EQ(ring.ring_order().size(), 64u);
}

TEST(ClusterViewWidgetTest, TheRingFilterBoxAppliesOrRefusesSayingWhy) {
  testing::EnsureApplication();
  ViewerState state;
  Load64Devices(&state);
  ClusterViewWidget widget(&state.hilbert_ring);
  widget.resize(900, 900);
  QLineEdit* box = widget.filter_box();
  ASSERT_NE(box, nullptr);
  box->setText("rack=rack-1");
  emit box->returnPressed();
  EXPECT_EQ(state.hilbert_ring.ring_order().size(), 32u);
  EXPECT_TRUE(box->toolTip().isEmpty());
  box->setText("rack=rack-9");
  emit box->returnPressed();
  EXPECT_EQ(state.hilbert_ring.ring_order().size(), 32u);  // the old filter kept
  EXPECT_TRUE(box->toolTip().contains("rack-9")) << box->toolTip().toStdString();
}

}  // namespace
}  // namespace trainscope::viewer

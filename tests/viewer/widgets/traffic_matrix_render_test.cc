// Renders the traffic matrix offscreen (as `--render traffic-matrix` does)
// for a synthetic 16-device job with one slow link and checks by pixels that
// its cell is the visibly heaviest.
#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <QTabWidget>
#include <cstdlib>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "trainscope/viewer/widgets/traffic_matrix_widget.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

int Darkness(QColor c) { return 765 - c.red() - c.green() - c.blue(); }

TEST(TrafficMatrixRenderTest, TheSlowLinksCellIsVisiblyTheHeaviest) {
  testing::EnsureApplication();
  SyntheticJobOptions options;
  options.devices = 16;
  options.hosts = 2;
  options.steps = 6;
  options.straggler = std::nullopt;
  options.slow_link = std::make_pair(12u, 13u);
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  absl::StatusOr<QImage> image = OffscreenRenderer::Render(&state, "traffic-matrix", 1600, 900, {});
  ASSERT_TRUE(image.ok()) << image.status();
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    image->save(QString::fromStdString(std::string(dir) + "/traffic-matrix.png"));
  }
  const TrafficModel::Matrix& m = state.traffic.matrix();
  ASSERT_EQ(m.size(), 16u);
  auto centre = [&](size_t i, size_t j) {
    const RectF r = state.traffic_matrix.CellRect(i, j);
    return image->pixelColor(static_cast<int>(r.x + r.w / 2), static_cast<int>(r.y + r.h / 2));
  };
  const size_t slow_src = *m.IndexOf(12), slow_dst = *m.IndexOf(13);
  const QColor slow = centre(slow_src, slow_dst);
  EXPECT_GT(slow.red(), 90);
  EXPECT_LT(slow.green(), 40) << "the slow cell is dark red";
  int ring_cells = 0;
  for (size_t i = 0; i < 16; ++i) {
    for (size_t j = 0; j < 16; ++j) {
      if (i == slow_src && j == slow_dst) continue;
      const QColor c = centre(i, j);
      EXPECT_LT(Darkness(c), Darkness(slow) - 200) << i << "," << j;
      if (m.at(i, j).steps > 0) {
        ++ring_cells;
        // Tinted orange, unlike the grey of an empty cell.
        EXPECT_GT(c.red() - c.blue(), 20) << "a ring cell is tinted: " << i << "," << j;
      }
    }
  }
  EXPECT_EQ(ring_cells, 15);  // the rest of the ring
  // Every row has a bytes bar (grey) at the right of the matrix.
  const RectF bars = state.traffic_matrix.bars_rect();
  for (size_t i = 0; i < 16; ++i) {
    const RectF r = state.traffic_matrix.CellRect(i, 0);
    const QColor c = image->pixelColor(static_cast<int>(bars.x + 3), static_cast<int>(r.y + 2));
    EXPECT_LT(c.red(), 160) << "row " << i;
  }
}

TEST(TrafficMatrixRenderTest, TheWindowHasAClusterTrafficTabPaintingTheMatrix) {
  testing::EnsureApplication();
  SyntheticJobOptions options;
  options.devices = 8;
  options.straggler = std::nullopt;
  options.slow_link = std::make_pair(2u, 3u);
  ViewerState state;
  state.Load(GenerateSyntheticJob(options));
  MainWindow window(&state, nullptr, {});
  QTabWidget* tabs = window.findChild<QTabWidget*>();
  ASSERT_NE(tabs, nullptr);
  int index = -1;
  for (int i = 0; i < tabs->count(); ++i)
    if (tabs->tabText(i) == "Cluster traffic") index = i;
  ASSERT_GE(index, 0);
  auto* widget = qobject_cast<TrafficMatrixWidget*>(tabs->widget(index));
  ASSERT_NE(widget, nullptr);
  widget->resize(1000, 700);
  const QImage image = widget->grab().toImage();
  const TrafficModel::Matrix& m = state.traffic.matrix();
  const RectF r = state.traffic_matrix.CellRect(*m.IndexOf(2), *m.IndexOf(3));
  const QColor slow =
      image.pixelColor(static_cast<int>(r.x + r.w / 2), static_cast<int>(r.y + r.h / 2));
  EXPECT_LT(slow.green(), 40);
  EXPECT_GT(slow.red(), 90);
}

}  // namespace
}  // namespace trainscope::viewer

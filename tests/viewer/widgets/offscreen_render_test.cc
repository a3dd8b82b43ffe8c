// Renders each view offscreen (QT_QPA_PLATFORM=offscreen, set by ctest) and
// checks pixels where the model says things are, so a blank or wrong view
// fails.
#include <gtest/gtest.h>

#include <QApplication>
#include <QColor>
#include <QImage>
#include <cstdlib>
#include <functional>
#include <set>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

using Predicate = std::function<bool(QColor)>;

bool Green(QColor c) { return c.green() > c.red() + 40 && c.green() > c.blue() + 40; }
bool Yellow(QColor c) { return c.red() > 200 && c.green() > 150 && c.blue() < 110; }
bool Purple(QColor c) { return c.red() > 100 && c.blue() > 130 && c.green() < 100; }
bool Blue(QColor c) { return c.blue() > 150 && c.red() < 90 && c.green() > 90 && c.green() < 160; }
bool Red(QColor c) { return c.red() > 190 && c.green() < 80 && c.blue() < 80; }

// Pixels matching `match` on the horizontal line y, between x0 and x1.
int CountOnLine(const QImage& image, int y, int x0, int x1, const Predicate& match) {
  int count = 0;
  for (int x = std::max(0, x0); x < std::min(image.width(), x1); ++x) {
    count += match(image.pixelColor(x, y));
  }
  return count;
}

int CountInBox(const QImage& image, int cx, int cy, int half, const Predicate& match) {
  int count = 0;
  for (int y = cy - half; y <= cy + half; ++y)
    count += CountOnLine(image, y, cx - half, cx + half + 1, match);
  return count;
}

class OffscreenRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  QImage Render(ViewerState* state, const std::string& view, int width = 1400, int height = 800) {
    absl::StatusOr<QImage> image = OffscreenRenderer::Render(state, view, width, height, {});
    EXPECT_TRUE(image.ok()) << image.status();
    if (image.ok() && std::getenv("VIEWER_TEST_SAVE") != nullptr) {
      image->save(QString::fromStdString(std::string(std::getenv("VIEWER_TEST_SAVE")) + "/" + view +
                                         ".png"));
    }
    return image.ok() ? *image : QImage();
  }
};

TEST_F(OffscreenRenderTest, MareyShowsClassColoursOnTheAxesAndTheStragglersCross) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 8;
  options.stages = 2;
  options.steps = 3;
  options.straggler = 5;
  options.straggler_from_step = 1;
  state.Load(GenerateSyntheticJob(options));
  const QImage image = Render(&state, "marey");
  ASSERT_EQ(image.width(), 1400);
  const RectF plot = state.marey.plot_rect();
  const auto& rows = state.marey.Rows();
  ASSERT_EQ(rows.size(), 8u);
  const int x0 = static_cast<int>(plot.x), x1 = static_cast<int>(plot.x + plot.w);
  for (const auto& row : rows) {
    const int y = static_cast<int>(row.axis_y);
    EXPECT_GT(CountOnLine(image, y, x0, x1, Green), 100) << row.label;
    EXPECT_GT(CountOnLine(image, y, x0, x1, Yellow), 20) << row.label;
  }
  // Stage 0 (ranks 0-3) sends, stage 1 (ranks 4-7) receives.
  EXPECT_GT(CountOnLine(image, static_cast<int>(rows[1].axis_y), x0, x1, Purple), 3);
  EXPECT_EQ(CountOnLine(image, static_cast<int>(rows[1].axis_y), x0, x1, Blue), 0);
  EXPECT_GT(CountOnLine(image, static_cast<int>(rows[6].axis_y), x0, x1, Blue), 3);
  // The red cross sits at the start of the straggler's axis only.
  const int cross_x = static_cast<int>(plot.x - 9);
  for (const auto& row : rows) {
    const int red = CountInBox(image, cross_x, static_cast<int>(row.axis_y), 5, Red);
    if (row.rank == 5) {
      EXPECT_GT(red, 6) << row.label;
    } else {
      EXPECT_EQ(red, 0) << row.label;
    }
  }
}

TEST_F(OffscreenRenderTest, BlankMareyHasNoBands) {
  ViewerState state;
  const QImage image = Render(&state, "marey");
  const RectF plot = state.marey.plot_rect();
  int green = 0;
  for (int y = static_cast<int>(plot.y); y < plot.y + plot.h; y += 3) {
    green +=
        CountOnLine(image, y, static_cast<int>(plot.x), static_cast<int>(plot.x + plot.w), Green);
  }
  EXPECT_EQ(green, 0);
}

TEST_F(OffscreenRenderTest, DenseMareyRastersEveryDevice) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 256;
  options.steps = 2;
  options.straggler = 200;
  options.straggler_from_step = 1;
  state.Load(GenerateSyntheticJob(options));
  const QImage image = Render(&state, "marey", 1400, 900);
  EXPECT_TRUE(state.marey.frame_stats().dense);
  const RectF plot = state.marey.plot_rect();
  const auto& rows = state.marey.Rows();
  ASSERT_EQ(rows.size(), 256u);
  for (size_t i = 0; i < rows.size(); i += 37) {
    const int y = static_cast<int>(rows[i].axis_y);
    EXPECT_GT(
        CountOnLine(image, y, static_cast<int>(plot.x), static_cast<int>(plot.x + plot.w), Green),
        100)
        << rows[i].label;
  }
  EXPECT_GT(
      CountInBox(image, static_cast<int>(plot.x - 9), static_cast<int>(rows[200].axis_y), 3, Red),
      0);
}

TEST_F(OffscreenRenderTest, OverviewBarsHaveTheirSegmentColours) {
  ViewerState state;
  SyntheticJobOptions options;
  options.devices = 4;
  options.straggler = 1;
  state.Load(GenerateSyntheticJob(options));
  const QImage image = Render(&state, "overview");
  const auto& bars = state.overview.Bars();
  ASSERT_EQ(bars.size(), 4u);
  for (const auto& bar : bars) {
    const RectF r = bar.compute_rect;
    // Left of the communication overlay, the forward+backward segment.
    const QColor c =
        image.pixelColor(static_cast<int>(r.x + r.w * 0.25f), static_cast<int>(r.y + r.h / 2));
    EXPECT_EQ(c.rgb() & 0xFFFFFF, OverviewModel::kForwardBackwardColor & 0xFFFFFF) << bar.rank;
    if (bar.tail_rect.h > 4) {
      const QColor t = image.pixelColor(static_cast<int>(bar.tail_rect.x + 3),
                                        static_cast<int>(bar.tail_rect.y + bar.tail_rect.h / 2));
      EXPECT_EQ(t.rgb() & 0xFFFFFF, OverviewModel::kTailColor & 0xFFFFFF) << bar.rank;
    }
  }
  // The average communication line is drawn somewhere in the chart.
  const RectF chart = state.overview.chart_rect();
  int yellow = 0;
  for (int y = static_cast<int>(chart.y); y < chart.y + chart.h; ++y) {
    yellow += CountOnLine(image, y, static_cast<int>(chart.x), static_cast<int>(chart.x + chart.w),
                          Yellow);
  }
  EXPECT_GT(yellow, 200);
}

TEST_F(OffscreenRenderTest, TablesAndWindowAreNotBlank) {
  ViewerState state;
  state.Load(GenerateSyntheticJob({}));
  for (const std::string view : {"alerts", "jobs", "all"}) {
    const QImage image = Render(&state, view, 1200, 700);
    ASSERT_EQ(image.width(), 1200) << view;
    std::set<QRgb> colours;
    int dark = 0;
    for (int y = 0; y < image.height(); y += 2) {
      for (int x = 0; x < image.width(); x += 2) {
        const QColor c = image.pixelColor(x, y);
        colours.insert(c.rgb());
        dark += c.lightness() < 100;
      }
    }
    EXPECT_GT(colours.size(), 20u) << view;
    EXPECT_GT(dark, 200) << view << ": no text drawn";
  }
}

TEST_F(OffscreenRenderTest, UnknownViewIsNamed) {
  ViewerState state;
  absl::StatusOr<QImage> image = OffscreenRenderer::Render(&state, "graph", 100, 100, {});
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("'graph'"), std::string::npos);
}

}  // namespace
}  // namespace trainscope::viewer

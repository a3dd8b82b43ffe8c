// The range statistics in the window (issue 23.5): a shift-drag in the
// Marey graph picks the steps it covers, the panel lists each device, the
// total and the top operators (sortable by a header click), the Marey graph
// marks the range in amber, and a click on an operator outlines it there.
// Rendered offscreen (QT_QPA_PLATFORM=offscreen), checked by pixels; and a
// real GPU trace's range figures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <QApplication>
#include <QColor>
#include <QHeaderView>
#include <QImage>
#include <QMouseEvent>
#include <QPushButton>
#include <QTableWidget>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "trainscope/collector/import/trace_importer.h"
#include "trainscope/viewer/stored_job_loader.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/units.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/main_window.h"
#include "trainscope/viewer/widgets/marey_widget.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "trainscope/viewer/widgets/range_stats_panel.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

bool Amber(QColor c) {
  return c.red() > 200 && c.green() > 110 && c.green() < 175 && c.blue() < 80;
}

// Columns of `image` inside `plot` with at least half their height amber:
// the range's edges.
std::vector<int> AmberColumns(const QImage& image, const RectF& plot) {
  std::vector<int> columns;
  for (int x = static_cast<int>(plot.x); x < static_cast<int>(plot.x + plot.w); ++x) {
    int amber = 0;
    for (int y = static_cast<int>(plot.y); y < static_cast<int>(plot.y + plot.h); ++y) {
      amber += Amber(image.pixelColor(x, y));
    }
    if (amber > plot.h / 2) columns.push_back(x);
  }
  return columns;
}

void Save(const QImage& image, const std::string& name) {
  if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
    image.save(QString::fromStdString(std::string(dir) + "/" + name + ".png"));
  }
}

void Send(QWidget* widget, QEvent::Type type, QPointF at, Qt::MouseButtons buttons) {
  QMouseEvent event(type, at, widget->mapToGlobal(at), Qt::LeftButton, buttons, Qt::ShiftModifier);
  QApplication::sendEvent(widget, &event);
}

class RangeStatsRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  void SetUp() override {
    SyntheticJobOptions options;
    options.devices = 4;
    options.steps = 8;
    state_.Load(GenerateSyntheticJob(options));
  }

  // The whole window, shown offscreen at its default size.
  std::unique_ptr<MainWindow> OpenWindow() {
    MainWindow::Config config;
    config.controls.job_id = state_.job_id();
    auto window = std::make_unique<MainWindow>(&state_, nullptr, config);
    window->setAttribute(Qt::WA_DontShowOnScreen);
    window->resize(1600, 1000);
    window->show();
    QApplication::processEvents();
    return window;
  }

  ViewerState state_;
};

TEST_F(RangeStatsRenderTest, AShiftDragPicksTheStepsTheMareyGraphMarksAndThePanelLists) {
  std::unique_ptr<MainWindow> window = OpenWindow();
  auto* marey = window->findChild<MareyWidget*>();
  auto* panel = window->findChild<RangeStatsPanel*>();
  ASSERT_NE(marey, nullptr);
  ASSERT_NE(panel, nullptr);
  EXPECT_TRUE(state_.range_stats.statistics().whole_job);

  // Show the whole run, then shift-drag from the middle of step 3 to the
  // middle of step 5's successor's start: steps 3 to 5 are mostly inside.
  state_.marey.ResetZoom();
  marey->repaint();
  const auto& steps = state_.marey.store().steps();
  ASSERT_GE(steps.size(), 6u);
  const StepRecord& s3 = steps.at(3);
  const StepRecord& s5 = steps.at(5);
  const float x0 = state_.marey.TimeToX(s3.start_ns + (s3.end_ns - s3.start_ns) / 3);
  const float x1 = state_.marey.TimeToX(s5.end_ns - (s5.end_ns - s5.start_ns) / 3);
  const float y = state_.marey.plot_rect().y + state_.marey.plot_rect().h / 2;
  Send(marey, QEvent::MouseButtonPress, {x0, y}, Qt::LeftButton);
  Send(marey, QEvent::MouseMove, {(x0 + x1) / 2, y}, Qt::LeftButton);
  Send(marey, QEvent::MouseMove, {x1, y}, Qt::LeftButton);
  Send(marey, QEvent::MouseButtonRelease, {x1, y}, Qt::NoButton);
  QApplication::processEvents();
  ASSERT_EQ(state_.range_stats.span(), (StepSpan{3, 5}));
  // The drag neither panned nor zoomed the graph.
  EXPECT_EQ(state_.marey.time_window().mode(), MareyTimeWindow::Mode::kWholeRun);

  // The panel: a row per device and the total, the operators of steps 3-5.
  const RangeStatistics::Result& r = state_.range_stats.statistics();
  EXPECT_EQ(r.steps, 3u);
  QTableWidget* devices = panel->devices();
  ASSERT_EQ(devices->rowCount(), 5);
  EXPECT_EQ(devices->item(4, 0)->text(), "total");
  EXPECT_EQ(devices->item(4, 1)->text().toStdString(),
            FormatDuration(static_cast<double>(r.total.wall_ns)));
  QTableWidget* operators = panel->operators();
  ASSERT_GT(operators->rowCount(), 1);
  EXPECT_EQ(operators->item(0, 0)->text().toStdString(), state_.range_stats.top().rows()[0].name);

  // The Marey graph marks the steps' extent: two amber edges where the
  // model puts steps 3 and 5's ends.
  marey->repaint();
  const QImage image = marey->grab().toImage();
  Save(image, "range-marey");
  const std::vector<int> edges = AmberColumns(image, state_.marey.plot_rect());
  ASSERT_FALSE(edges.empty());
  EXPECT_NEAR(edges.front(), state_.marey.TimeToX(s3.start_ns), 2.5);
  EXPECT_NEAR(edges.back(), state_.marey.TimeToX(s5.end_ns), 2.5);

  // Sorting: a click on "Calls" sorts by it, largest first; again, smallest.
  emit operators->horizontalHeader()->sectionClicked(2);
  EXPECT_EQ(state_.range_stats.top().sort_column(), TopOperators::Column::kCalls);
  EXPECT_TRUE(state_.range_stats.top().descending());
  EXPECT_EQ(operators->item(0, 2)->text().toULongLong(),
            state_.range_stats.top().rows().front().calls);
  EXPECT_GE(operators->item(0, 2)->text().toULongLong(),
            operators->item(operators->rowCount() - 1, 2)->text().toULongLong());
  emit operators->horizontalHeader()->sectionClicked(2);
  EXPECT_FALSE(state_.range_stats.top().descending());
  EXPECT_LE(operators->item(0, 2)->text().toULongLong(),
            operators->item(operators->rowCount() - 1, 2)->text().toULongLong());

  // "Whole job" drops the range and its band.
  panel->findChild<QPushButton*>()->click();
  QApplication::processEvents();
  EXPECT_TRUE(state_.range_stats.statistics().whole_job);
  marey->repaint();
  EXPECT_TRUE(AmberColumns(marey->grab().toImage(), state_.marey.plot_rect()).empty());
}

TEST_F(RangeStatsRenderTest, ClickingAnOperatorOutlinesItInTheMareyGraph) {
  std::unique_ptr<MainWindow> window = OpenWindow();
  state_.marey.ShowAroundStep(4, 1);
  QApplication::processEvents();
  auto* marey = window->findChild<MareyWidget*>();
  auto* panel = window->findChild<RangeStatsPanel*>();
  marey->repaint();
  const size_t before = state_.marey.Draw().overlay_rects.size();
  // The top row: the operator with the most self time.
  emit panel->operators()->cellClicked(0, 0);
  marey->repaint();
  const DrawList& list = state_.marey.Draw();
  EXPECT_GT(list.overlay_rects.size(), before + 3) << "its bands on several devices outlined";
}

TEST_F(RangeStatsRenderTest, RendersThePanelOffscreen) {
  state_.range_stats.SelectSteps(2, 4);
  absl::StatusOr<QImage> image = OffscreenRenderer::Render(&state_, "range-stats", 1400, 300, {});
  ASSERT_TRUE(image.ok()) << image.status();
  Save(*image, "range-stats");
  EXPECT_EQ(image->width(), 1400);
  EXPECT_EQ(state_.range_stats.statistics().first_step, 2u);
  // Text is drawn over the tables: dark pixels in both halves.
  int left = 0, right = 0;
  for (int y = 40; y < image->height(); ++y) {
    for (int x = 0; x < image->width(); ++x) {
      if (qGray(image->pixel(x, y)) < 90) (x < image->width() / 2 ? left : right)++;
    }
  }
  EXPECT_GT(left, 500);
  EXPECT_GT(right, 500);
}

// A real GPU trace (rank 0 of a 2-rank NCCL job, 3 steps, 2.7 k kernels):
// the whole job's kernel time is the analysis' device busy time, the parts
// add up, and kernels are among the top operators with their GPU class.
TEST_F(RangeStatsRenderTest, AnImportedKinetoTracesRangeHasKernelTime) {
  const std::filesystem::path trace =
      std::filesystem::path(KINETO_GPU_DATA) / "nccl_parser_config__nccl_data.json.gz";
  ASSERT_TRUE(std::filesystem::exists(trace)) << trace << " is missing";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("trainscope-range-stats-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    auto importer =
        collector::TraceImporter::Create({.data_dir = dir, .job_id = "nccl", .fsync = false});
    ASSERT_TRUE(importer.ok()) << importer.status();
    ASSERT_TRUE((*importer)->Import({{.path = trace.string()}}).ok());
  }
  absl::StatusOr<JobData> data = LoadStoredJob(dir, "nccl", {});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(data.ok()) << data.status();
  ViewerState state;
  state.Load(*data);
  state.range_stats.Update(state.marey.store(), state.names, 0);
  const RangeStatistics::Result& r = state.range_stats.statistics();
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_TRUE(r.total.has_gpu);
  int64_t busy = 0;
  for (const auto& [number, step] : state.marey.store().steps()) {
    for (const DeviceStepRecord& d : step.devices) busy += d.gpu_busy_ns;
  }
  EXPECT_GT(busy, 0);
  EXPECT_EQ(r.total.kernel_ns, busy);
  EXPECT_EQ(r.total.gpu_operators + r.total.operators, state.marey.store().operator_count());
  EXPECT_GT(r.total.gpu_operators, 2000u);
  bool kernel = false;
  for (const TopOperators::Row& row : state.range_stats.top().rows()) {
    EXPECT_LE(row.self_ns, row.total_ns) << row.name;
    EXPECT_LE(row.p50_ns, row.p95_ns) << row.name;
    kernel = kernel || row.op_class == OpClass::kGpuKernel;
  }
  EXPECT_TRUE(kernel);
  absl::StatusOr<QImage> image = OffscreenRenderer::Render(&state, "range-stats", 1400, 300, {});
  ASSERT_TRUE(image.ok()) << image.status();
  Save(*image, "range-stats-kineto");
}

}  // namespace
}  // namespace trainscope::viewer

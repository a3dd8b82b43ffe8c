// Renders the Marey graph and the overview of a job with GPU work offscreen
// (QT_QPA_PLATFORM=offscreen) and checks pixels where the models say the
// GPU streams and the device-time bars are, so rows that vanish or take the
// wrong colours fail.
#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QColor>
#include <QImage>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/marey_widget.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/kineto_trace.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

using Predicate = std::function<bool(QColor)>;

bool Green(QColor c) { return c.green() > c.red() + 40 && c.green() > c.blue() + 40; }
bool Yellow(QColor c) { return c.red() > 200 && c.green() > 150 && c.blue() < 110; }
bool Teal(QColor c) { return c.red() < 60 && c.green() > 110 && c.blue() > 100; }
bool Red(QColor c) { return c.red() > 190 && c.green() < 80 && c.blue() < 80; }
// Kernels, drawn one by one or merged (a merged bin's green pales with its
// busy share); teal copies (red 0) are not.
bool Greenish(QColor c) {
  return c.red() > 30 && c.green() > c.red() + 25 && c.green() > c.blue() + 25;
}

int CountOnLine(const QImage& image, int y, int x0, int x1, const Predicate& match) {
  int count = 0;
  for (int x = std::max(0, x0); x < std::min(image.width(), x1); ++x) {
    count += match(image.pixelColor(x, y));
  }
  return count;
}

class GpuViewsRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  static QImage Render(ViewerState* state, const std::string& view, int width = 1400,
                       int height = 800) {
    absl::StatusOr<QImage> image = OffscreenRenderer::Render(state, view, width, height, {});
    EXPECT_TRUE(image.ok()) << image.status();
    if (image.ok() && std::getenv("VIEWER_TEST_SAVE") != nullptr) {
      image->save(QString::fromStdString(std::string(std::getenv("VIEWER_TEST_SAVE")) + "/gpu-" +
                                         view + ".png"));
    }
    return image.ok() ? *image : QImage();
  }

  static SyntheticJobOptions GpuJob() {
    SyntheticJobOptions options;
    options.devices = 4;
    options.steps = 3;
    options.straggler = 2;
    options.straggler_from_step = 1;
    options.gpu = true;
    return options;
  }
};

TEST_F(GpuViewsRenderTest, MareyDrawsEachDevicesStreamsInTheirClassColours) {
  ViewerState state;
  state.Load(GenerateSyntheticJob(GpuJob()));
  const QImage image = Render(&state, "marey");
  const RectF plot = state.marey.plot_rect();
  const int x0 = static_cast<int>(plot.x), x1 = static_cast<int>(plot.x + plot.w);
  const auto& rows = state.marey.Rows();
  ASSERT_EQ(rows.size(), 16u);  // per device: its CPU row and three streams
  int streams = 0;
  std::map<std::pair<uint32_t, uint32_t>, int> green;  // (rank, stream) -> kernel pixels
  for (const auto& row : rows) {
    const int y = static_cast<int>(row.axis_y);
    if (!row.gpu) {
      EXPECT_LT(row.height, rows[1].height) << row.label << ": the CPU row is the thin one";
      EXPECT_GT(CountOnLine(image, y, x0, x1, Green), 100) << row.label;
      continue;
    }
    ++streams;
    green[{row.rank, row.gpu_stream}] = CountOnLine(image, y, x0, x1, Green);
    // (Joins between other rows cross these lines: only the colours a row's
    // own bands bring are checked, not the absence of others.)
    switch (row.gpu_stream) {
      case 7:  // kernels
        EXPECT_GT(CountOnLine(image, y, x0, x1, Green), 200) << row.label;
        break;
      case 20:  // NCCL kernels
        EXPECT_GT(CountOnLine(image, y, x0, x1, Yellow), 30) << row.label;
        break;
      case 9:  // the batch's host-to-device copy
        EXPECT_GT(CountOnLine(image, y, x0, x1, Teal), 0) << row.label;
        break;
      default:
        ADD_FAILURE() << "unexpected stream row " << row.label;
    }
  }
  // Kernels are on their stream's row, not on the NCCL or copy rows (where
  // only crossing joins bring a little green).
  for (uint32_t rank = 0; rank < 4; ++rank) {
    const int kernels = green[std::make_pair(rank, 7u)];
    EXPECT_LT(green[std::make_pair(rank, 20u)] * 4, kernels) << "rank " << rank;
    EXPECT_LT(green[std::make_pair(rank, 9u)] * 4, kernels) << "rank " << rank;
  }
  EXPECT_EQ(streams, 12);
  // The NCCL kernels of one collective are joined from device to device:
  // half-way between rank 0's and rank 1's NCCL rows the band's colour shows
  // (translucent yellow over the background).
  const int between = static_cast<int>((rows[3].axis_y + rows[7].axis_y) / 2);
  const int tinted = CountOnLine(image, between, x0, x1, [](QColor c) {
    return c.red() > 230 && c.green() > 190 && c.blue() < 200 && c.blue() + 40 < c.green();
  });
  EXPECT_GT(tinted, 20);
  // The straggler's cross sits on its first row only.
  const int cross_x = static_cast<int>(plot.x - 9);
  int red_rows = 0;
  for (const auto& row : rows) {
    int red = 0;
    for (int dy = -4; dy <= 4; ++dy) {
      red += CountOnLine(image, static_cast<int>(row.axis_y) + dy, cross_x - 5, cross_x + 6, Red);
    }
    red_rows += red > 4;
    if (red > 4) EXPECT_EQ(row.label, "rank 2 CPU");
  }
  EXPECT_EQ(red_rows, 1);
}

TEST_F(GpuViewsRenderTest, OverviewBarsAreDeviceTime) {
  ViewerState state;
  state.Load(GenerateSyntheticJob(GpuJob()));
  const QImage image = Render(&state, "overview");
  const auto& bars = state.overview.Bars();
  ASSERT_EQ(bars.size(), 4u);
  for (const auto& bar : bars) {
    ASSERT_TRUE(bar.gpu);
    // GPU compute (green) at the bottom, NCCL wait (red) above it.
    const RectF compute = bar.segments[0].rect;
    const RectF wait = bar.segments[1].rect;
    ASSERT_GT(compute.h, 4);
    const int cx = static_cast<int>(compute.x + compute.w / 2);
    EXPECT_TRUE(Green(image.pixelColor(cx, static_cast<int>(compute.y + compute.h / 2))));
    if (wait.h > 4) {
      EXPECT_TRUE(Red(image.pixelColor(cx, static_cast<int>(wait.y + wait.h / 2))));
    }
  }
  // The step's detail lists its kernels, the NCCL kernel among them.
  const auto& kernels = state.overview.TopKernels();
  ASSERT_FALSE(kernels.empty());
  bool nccl = false;
  for (const auto& k : kernels) nccl = nccl || k.op_class == OpClass::kGpuCollective;
  EXPECT_TRUE(nccl);
}

// A real GPU trace (rank 0 of a 2-rank NCCL job, 3 steps, 2.7 k kernels),
// imported as a user would and opened from the data dir.
TEST_F(GpuViewsRenderTest, AnImportedKinetoTraceShowsItsGpuStreams) {
  absl::StatusOr<JobData> data =
      testing::LoadKinetoTrace("nccl_parser_config__nccl_data.json.gz", "nccl");
  ASSERT_TRUE(data.ok()) << data.status();
  ViewerState state;
  state.Load(*data);

  const QImage marey = Render(&state, "marey");
  const RectF plot = state.marey.plot_rect();
  const int x0 = static_cast<int>(plot.x), x1 = static_cast<int>(plot.x + plot.w);
  const auto& rows = state.marey.Rows();
  const MareyModel::Row* kernels = nullptr;
  const MareyModel::Row* nccl = nullptr;
  for (const auto& row : rows) {
    if (!row.gpu) continue;
    // The compute stream holds most pixels of kernels; the NCCL stream's
    // bands are yellow.
    if (CountOnLine(marey, static_cast<int>(row.axis_y), x0, x1, Greenish) > 100) kernels = &row;
    if (CountOnLine(marey, static_cast<int>(row.axis_y), x0, x1, Yellow) > 10) nccl = &row;
  }
  ASSERT_NE(kernels, nullptr) << "no GPU stream row with kernels";
  ASSERT_NE(nccl, nullptr) << "no GPU stream row with NCCL kernels";
  EXPECT_NE(kernels->gpu_stream, nccl->gpu_stream);
  EXPECT_EQ(kernels->rank, 0u);
  ASSERT_FALSE(rows.front().gpu);  // the thin CPU row first
  EXPECT_LT(rows.front().height, kernels->height);

  // The overview's bars are device time: the step is CPU-bound, so the
  // launch-bound idle segment is larger than GPU compute.
  Render(&state, "overview");
  const auto& bars = state.overview.Bars();
  ASSERT_EQ(bars.size(), 1u);
  ASSERT_TRUE(bars[0].gpu);
  EXPECT_GT(bars[0].segments[0].ns, 0);                       // GPU compute
  EXPECT_GT(bars[0].segments[4].ns, bars[0].segments[0].ns);  // idle: launch-bound
  EXPECT_FALSE(state.overview.TopKernels().empty());
}

TEST_F(GpuViewsRenderTest, TheMareyPanelShowsCpuRowsOnDemand) {
  ViewerState state;
  state.Load(GenerateSyntheticJob(GpuJob()));
  state.marey.SetShowCpuRows(false);
  MareyPanel panel(&state.marey);
  panel.SyncControls();
  QCheckBox* cpu_rows = nullptr;
  for (QCheckBox* box : panel.findChildren<QCheckBox*>()) {
    if (box->text() == "CPU rows") cpu_rows = box;
  }
  ASSERT_NE(cpu_rows, nullptr);
  EXPECT_FALSE(cpu_rows->isChecked());        // synced with the model
  EXPECT_EQ(state.marey.Rows().size(), 12u);  // streams only
  cpu_rows->setChecked(true);
  EXPECT_TRUE(state.marey.show_cpu_rows());
  EXPECT_EQ(state.marey.Rows().size(), 16u);
  EXPECT_FALSE(state.marey.Rows().front().gpu);
}

}  // namespace
}  // namespace trainscope::viewer

// Linked highlighting rendered offscreen (issue 24): a slow link's alert
// selects its two devices, and the Marey graph (their rows tinted and
// marked, each send of the link joined to its receive), the overview (their
// bars' slots) and the alerts list (the rows naming them) show it in pixels;
// without a selection none of it is drawn. VIEWER_TEST_SAVE=DIR keeps the
// images (docs/screenshots/linked-selection-*.png come from here).
#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

constexpr uint32_t kSrc = 0, kDst = 2;

bool Is(QColor c, Color want, int tolerance = 3) {
  const QColor w = QColor::fromRgba(want);
  return std::abs(c.red() - w.red()) <= tolerance && std::abs(c.green() - w.green()) <= tolerance &&
         std::abs(c.blue() - w.blue()) <= tolerance;
}
bool Blue(QColor c) { return c.blue() > 150 && c.red() < 90 && c.green() < 160; }

int Count(const QImage& image, int x0, int y0, int x1, int y1, Color want) {
  int n = 0;
  for (int y = std::max(0, y0); y < std::min(image.height(), y1); ++y) {
    for (int x = std::max(0, x0); x < std::min(image.width(), x1); ++x) {
      n += Is(image.pixelColor(x, y), want);
    }
  }
  return n;
}

class LinkedSelectionRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::EnsureApplication(); }

  // A 4-device synthetic job whose link 0 -> 2 is slow (its slow_link
  // alert), with pipeline transfers 0 <-> 2 and 1 -> 3 in every step, as the
  // real pipeline example sends them.
  void SetUp() override {
    SyntheticJobOptions options;
    options.devices = 4;
    options.hosts = 2;
    options.steps = 4;
    options.straggler.reset();
    options.slow_link = std::make_pair(kSrc, kDst);
    JobData data = GenerateSyntheticJob(options);
    OperatorBatchRecord& ops = data.operators;
    const uint32_t send = static_cast<uint32_t>(ops.strings.size());
    ops.strings.push_back("send");
    ops.strings.push_back("recv");
    auto transfer = [&](uint32_t rank, uint32_t peer, bool is_send, int64_t start, int64_t end,
                        uint64_t step, uint64_t sequence) {
      OperatorRecord op;
      op.rank = rank;
      op.peer = static_cast<int32_t>(peer);
      op.op_class = is_send ? OpClass::kSend : OpClass::kRecv;
      op.name = is_send ? send : send + 1;
      op.start_ns = op.raw_start_ns = start;
      op.end_ns = op.raw_end_ns = end;
      op.step = step;
      op.group_sequence = sequence;
      ops.operators.push_back(op);
    };
    for (const StepRecord& step : data.steps) {
      const int64_t t = step.start_ns + (step.end_ns - step.start_ns) / 3;
      const int64_t d = (step.end_ns - step.start_ns) / 10;
      transfer(kSrc, kDst, true, t, t + d / 4, step.step, step.step);
      transfer(kDst, kSrc, false, t - d / 8, t + d, step.step, step.step);
      transfer(1, 3, true, t, t + d / 4, step.step, step.step);
      transfer(3, 1, false, t - d / 8, t + d / 2, step.step, step.step);
    }
    state_.Load(data);
  }

  QImage Render(const std::string& view, const std::string& name) {
    absl::StatusOr<QImage> image = OffscreenRenderer::Render(&state_, view, 1400, 800, {});
    EXPECT_TRUE(image.ok()) << image.status();
    if (!image.ok()) return QImage();
    if (const char* dir = std::getenv("VIEWER_TEST_SAVE")) {
      image->save(QString::fromStdString(std::string(dir) + "/linked-selection-" + name + ".png"));
    }
    return *image;
  }

  void SelectSlowLinkAlert() {
    for (size_t i = 0; i < state_.alerts.size(); ++i) {
      const Alert* a = state_.alerts.AtRow(i);
      if (a != nullptr && a->rule == "slow_link") {
        ASSERT_NE(state_.SelectAlert(i), nullptr);
        ASSERT_EQ(state_.selection.selected_link(), std::make_pair(kSrc, kDst));
        // Show the whole run: the alert zoomed the graph to its step.
        state_.marey.ResetZoom();
        return;
      }
    }
    FAIL() << "the synthetic job raised no slow_link alert";
  }

  const MareyRow& RowOf(uint32_t rank) {
    for (const MareyRow& row : state_.marey.Rows()) {
      if (row.kind == MareyRowKind::kDevice && row.rank == rank) return row;
    }
    ADD_FAILURE() << "no Marey row for rank " << rank;
    return state_.marey.Rows().front();
  }

  // Tinted pixels in a device's row of the Marey graph (2 px in from its
  // edges: a row ends on a fractional pixel that its neighbour shares).
  int TintInRow(const QImage& image, uint32_t rank) {
    const MareyRow& row = RowOf(rank);
    const RectF plot = state_.marey.plot_rect();
    return Count(image, static_cast<int>(plot.x), static_cast<int>(row.top) + 2,
                 static_cast<int>(plot.x + plot.w), static_cast<int>(row.top + row.height) - 2,
                 kSelectTintColor);
  }

  ViewerState state_;
};

TEST_F(LinkedSelectionRenderTest, MareyTintsTheLinksDevicesAndJoinsItsTransfers) {
  QImage before = Render("marey", "marey-none");
  for (uint32_t r = 0; r < 4; ++r) EXPECT_EQ(TintInRow(before, r), 0) << r;
  SelectSlowLinkAlert();
  QImage image = Render("marey", "marey");
  const RectF plot = state_.marey.plot_rect();
  for (uint32_t r = 0; r < 4; ++r) {
    const bool selected = r == kSrc || r == kDst;
    // Tinted where no band or join covers the row (most of it), else none.
    const int tinted = TintInRow(image, r);
    if (selected) {
      EXPECT_GT(tinted, static_cast<int>(plot.w * RowOf(r).height * 0.05)) << r;
    } else {
      EXPECT_EQ(tinted, 0) << r;
    }
    // The solid mark at the start of the axis.
    const QColor mark =
        image.pixelColor(static_cast<int>(plot.x - 2), static_cast<int>(RowOf(r).axis_y));
    EXPECT_EQ(Blue(mark), selected) << r << " " << mark.name().toStdString();
  }
  // Each step's send 0 -> 2 joined to its receive: blue where the join
  // crosses rank 1's axis (its midpoint), though rank 1 is not selected.
  EXPECT_EQ(state_.marey.frame_stats().link_transfers, state_.overview.step_count());
  const MareyRow& r0 = RowOf(kSrc);
  const MareyRow& r2 = RowOf(kDst);
  int blue_joins = 0;
  const int y = static_cast<int>(std::lround((r0.axis_y + r2.axis_y) / 2));
  for (int x = static_cast<int>(plot.x); x < static_cast<int>(plot.x + plot.w); ++x) {
    blue_joins += Blue(image.pixelColor(x, y)) && !Blue(image.pixelColor(x - 1, y));
  }
  EXPECT_GE(blue_joins, static_cast<int>(state_.overview.step_count())) << "at y " << y;
}

TEST_F(LinkedSelectionRenderTest, OverviewTintsTheLinksDevicesBars) {
  SelectSlowLinkAlert();
  QImage image = Render("overview", "overview");
  const auto& bars = state_.overview.Bars();
  ASSERT_EQ(bars.size(), 4u);
  const RectF area = state_.overview.bars_rect();
  const float slot = area.w / 4;
  for (const auto& bar : bars) {
    const bool selected = bar.rank == kSrc || bar.rank == kDst;
    EXPECT_EQ(bar.selected, selected);
    const int x0 = static_cast<int>(area.x + slot * static_cast<float>(bar.rank)) + 2;
    const int tinted =
        Count(image, x0, static_cast<int>(area.y) + 2, x0 + static_cast<int>(slot) - 4,
              static_cast<int>(area.y + area.h) - 2, kSelectTintColor);
    if (selected) {
      EXPECT_GT(tinted, 200) << bar.rank;
    } else {
      EXPECT_EQ(tinted, 0) << bar.rank;
    }
  }
}

TEST_F(LinkedSelectionRenderTest, AlertsListTintsTheRowsNamingTheLinksDevices) {
  QImage before = Render("alerts", "alerts-none");
  EXPECT_EQ(Count(before, 0, 0, before.width(), before.height(), kSelectTintColor), 0);
  // The link picked in a cluster view (not by its alert, whose row the list
  // would show selected, in the style's highlight instead).
  state_.selection.SelectLink(kSrc, kDst);
  state_.SyncSelection();
  size_t naming = 0;
  for (const AlertsModel::Row& row : state_.alerts.Rows()) naming += row.selected_devices;
  ASSERT_GE(naming, 1u);
  QImage image = Render("alerts", "alerts");
  // A row's cells past its state column: a few thousand pixels per row.
  EXPECT_GT(Count(image, 0, 0, image.width(), image.height(), kSelectTintColor),
            static_cast<int>(naming) * 1000);
}

}  // namespace
}  // namespace trainscope::viewer

// Renders the Selection and Monitoring views offscreen (QT_QPA_PLATFORM=
// offscreen, set by ctest) from a stored job whose loss reports went
// through the collector's real LossTracker, and checks pixels where the
// model says things are: candidate frames, the maps' hottest pixel where the
// fixture put the largest C value, the slider changing the picture, and the
// placeholder of a job without loss data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <QApplication>
#include <QColor>
#include <QComboBox>
#include <QImage>
#include <QSlider>
#include <cstdlib>
#include <filesystem>

#include "loss_fixture.h"
#include "trainscope/viewer/stored_job_loader.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/monitoring_view.h"
#include "trainscope/viewer/widgets/offscreen_renderer.h"
#include "widgets/test_application.h"

namespace trainscope::viewer {
namespace {

using testing::LossFixture;

bool CandidateRed(QColor c) { return c.red() > 190 && c.green() < 60 && c.blue() < 60; }
bool Reddish(QColor c) { return c.red() > c.blue() + 15; }
bool Bluish(QColor c) { return c.blue() > c.red() + 15; }
int Darkness(QColor c) { return 3 * 255 - c.red() - c.green() - c.blue(); }

QColor At(const QImage& image, float x, float y) {
  return image.pixelColor(static_cast<int>(x), static_cast<int>(y));
}

// The map pixel (column, row) whose block is darkest in `rect` (a map of
// `side` x `side` drawn nearest-neighbour), sampled at the block centres.
std::pair<uint32_t, uint32_t> Darkest(const QImage& image, RectF rect, uint32_t side) {
  std::pair<uint32_t, uint32_t> best{0, 0};
  int darkest = -1;
  const float cell = rect.w / static_cast<float>(side);
  for (uint32_t y = 0; y < side; ++y) {
    for (uint32_t x = 0; x < side; ++x) {
      const int d = Darkness(At(image, rect.x + (x + 0.5f) * cell, rect.y + (y + 0.5f) * cell));
      if (d > darkest) {
        darkest = d;
        best = {x, y};
      }
    }
  }
  return best;
}

int Count(const QImage& image, RectF rect, bool (*match)(QColor)) {
  int n = 0;
  for (int y = static_cast<int>(rect.y) + 1; y < rect.y + rect.h - 1; y += 2) {
    for (int x = static_cast<int>(rect.x) + 1; x < rect.x + rect.w - 1; x += 2) {
      n += match(image.pixelColor(x, y));
    }
  }
  return n;
}

class LossViewsOffscreenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::EnsureApplication();
    dir_ = new std::filesystem::path(std::filesystem::path(::testing::TempDir()) /
                                     ("viewer-loss-render-" + std::to_string(::getpid())));
    std::filesystem::remove_all(*dir_);
    fixture_ = new LossFixture(testing::MakeLossFixture({}));
    ASSERT_TRUE(fixture_->WriteStoredJob(*dir_, "digits-lc").ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete fixture_;
  }

  // What `trainscope-viewer --data-dir DIR --job digits-lc` shows.
  void LoadStored(ViewerState* state) {
    absl::StatusOr<JobData> data = LoadStoredJob(*dir_, "digits-lc", {});
    ASSERT_TRUE(data.ok()) << data.status();
    state->Load(*data);
  }

  QImage Render(ViewerState* state, const std::string& view, int width, int height,
                const std::string& save_as) {
    MainWindow::Config config;
    config.show_loss_tab = true;
    absl::StatusOr<QImage> image = OffscreenRenderer::Render(state, view, width, height, config);
    EXPECT_TRUE(image.ok()) << image.status();
    if (image.ok() && std::getenv("VIEWER_TEST_SAVE") != nullptr) {
      image->save(QString::fromStdString(std::string(std::getenv("VIEWER_TEST_SAVE")) + "/" +
                                         save_as + ".png"));
    }
    return image.ok() ? *image : QImage();
  }

  static std::filesystem::path* dir_;
  static LossFixture* fixture_;
};

std::filesystem::path* LossViewsOffscreenTest::dir_ = nullptr;
LossFixture* LossViewsOffscreenTest::fixture_ = nullptr;

TEST_F(LossViewsOffscreenTest, SelectionGridFramesExactlyTheCandidatesRed) {
  ViewerState state;
  LoadStored(&state);
  const QImage image = Render(&state, "selection", 1400, 800, "loss-selection");
  ASSERT_EQ(image.width(), 1400);
  const std::vector<LossModel::Cell>& cells = state.loss.cell_geometry();
  const trainscope::v1::LossState truth = fixture_->Answer(std::nullopt).state();
  ASSERT_EQ(cells.size(), static_cast<size_t>(truth.items_size()));
  int candidates = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const LossModel::Cell& cell = cells[i];
    const auto& item = truth.items(static_cast<int>(i));
    ASSERT_EQ(cell.item, item.item());
    const bool candidate = item.label() != item.prediction() || item.epochs_in_top() >= 3;
    candidates += candidate;
    // The frame, on all four sides.
    const RectF r = cell.rect;
    for (auto [x, y] : {std::pair{r.x + 1, r.y + r.h / 2},
                        {r.x + r.w - 2, r.y + r.h / 2},
                        {r.x + r.w / 2, r.y + 1},
                        {r.x + r.w / 2, r.y + r.h - 2}}) {
      EXPECT_EQ(CandidateRed(At(image, x, y)), candidate)
          << "item " << cell.item << " at " << x << "," << y;
    }
    // The digit: dark background and bright strokes inside the thumbnail.
    const RectF t = cell.thumb_rect;
    EXPECT_GE(t.w, 40) << "thumbnail too small to read";
    int dark = 0, bright = 0;
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8; ++x) {
        const QColor c = At(image, t.x + (x + 0.5f) * t.w / 8, t.y + (y + 0.5f) * t.h / 8);
        dark += c.lightness() < 40;
        bright += c.lightness() > 200;
      }
    }
    EXPECT_GT(dark, 10) << cell.item;
    EXPECT_GT(bright, 5) << cell.item;
  }
  // The four mislabeled items and the one that never leaves the top.
  EXPECT_EQ(candidates, 5);
}

TEST_F(LossViewsOffscreenTest, MonitoringMapsPeakWhereTheFixturePutTheLargestContribution) {
  ViewerState state;
  LoadStored(&state);
  const uint64_t item = *state.loss.chosen_item();
  const QImage image = Render(&state, "monitoring", 1400, 700, "loss-monitoring");
  const LossModel::MonitoringGeometry& g = state.loss.monitoring_geometry();
  const std::optional<LossModel::Frame> frame = state.loss.CurrentFrame();
  ASSERT_TRUE(frame.has_value());
  ASSERT_EQ(frame->count, 5u);
  ASSERT_EQ(g.columns.size(), 2u);
  EXPECT_EQ(g.columns[0].layer, "conv1");
  EXPECT_EQ(g.columns[1].layer, "conv2");
  for (const LossModel::Column& column : g.columns) {
    const uint32_t side = column.width;
    // C on top is red and peaks at the fixture's hot pixel; R below is blue.
    EXPECT_GT(Count(image, column.contribution_rect, Reddish), 50) << column.layer;
    EXPECT_EQ(Count(image, column.contribution_rect, Bluish), 0) << column.layer;
    EXPECT_GT(Count(image, column.reduction_rect, Bluish), 50) << column.layer;
    EXPECT_EQ(Count(image, column.reduction_rect, Reddish), 0) << column.layer;
    EXPECT_EQ(Darkest(image, column.contribution_rect, side),
              LossFixture::HotPixel(item, frame->epoch, side))
        << column.layer;
  }
  // The newest snapshot of a mislabeled item holds its largest value, so its
  // hottest pixel is the scale's top colour.
  const RectF c = g.columns[0].contribution_rect;
  const auto [hx, hy] = LossFixture::HotPixel(item, frame->epoch, 8);
  const QColor hottest = At(image, c.x + (hx + 0.5f) * c.w / 8, c.y + (hy + 0.5f) * c.h / 8);
  EXPECT_EQ(hottest.rgb() & 0xFFFFFF, LossModel::ContributionColor(1) & 0xFFFFFF);
  // The input digit at the left, and the colour bar's two ramps.
  EXPECT_GT(Count(image, g.input_rect, [](QColor q) { return q.lightness() > 200; }), 10);
  EXPECT_GT(Count(image, g.colorbar_contribution, Reddish), 20);
  EXPECT_GT(Count(image, g.colorbar_reduction, Bluish), 20);
}

TEST_F(LossViewsOffscreenTest, TheSliderChangesTheShownIteration) {
  ViewerState state;
  LoadStored(&state);
  const uint64_t item = *state.loss.chosen_item();
  MonitoringView view(&state.loss);
  view.setAttribute(Qt::WA_DontShowOnScreen);
  view.resize(1200, 600);
  view.show();
  QApplication::processEvents();
  ASSERT_EQ(view.slider()->maximum(), 4);
  EXPECT_EQ(view.slider()->value(), 4);  // the newest
  const QImage newest = view.grab().toImage();
  const RectF before = state.loss.monitoring_geometry().columns[0].contribution_rect;
  const uint32_t newest_epoch = state.loss.CurrentFrame()->epoch;

  view.slider()->setValue(0);  // as a drag to the left end does
  QApplication::processEvents();
  const QImage oldest = view.grab().toImage();
  view.hide();
  const std::optional<LossModel::Frame> frame = state.loss.CurrentFrame();
  EXPECT_EQ(frame->index, 0u);
  EXPECT_EQ(frame->epoch, 0u);
  EXPECT_NE(frame->epoch, newest_epoch);
  const RectF c = state.loss.monitoring_geometry().columns[0].contribution_rect;
  EXPECT_EQ(c.x, before.x);
  EXPECT_EQ(Darkest(oldest, c, 8), LossFixture::HotPixel(item, 0, 8));
  EXPECT_EQ(Darkest(newest, c, 8), LossFixture::HotPixel(item, newest_epoch, 8));
  int changed = 0;
  for (int y = static_cast<int>(c.y); y < c.y + c.h; y += 3) {
    for (int x = static_cast<int>(c.x); x < c.x + c.w; x += 3) {
      changed += newest.pixel(x, y) != oldest.pixel(x, y);
    }
  }
  EXPECT_GT(changed, 200);
}

// Issue 23.5: an iteration whose values are small next to the item's largest
// was near-blank on the one shared scale. The default colours each iteration
// on its own maximum (its hot pixel at the ramp's top); the control switches
// to the shared scale or to log.
TEST_F(LossViewsOffscreenTest, ASmallIterationShowsItsStructureOnTheDefaultScale) {
  ViewerState state;
  LoadStored(&state);
  const uint64_t item = *state.loss.chosen_item();
  state.loss.SetIterationIndex(0);  // the oldest: the smallest values of a mislabeled item
  ASSERT_EQ(state.loss.map_scaling(), MapScaling::kPerIteration);
  const QImage own = Render(&state, "monitoring", 1400, 700, "loss-monitoring-per-iteration");
  const RectF c = state.loss.monitoring_geometry().columns[0].contribution_rect;
  const auto [hx, hy] = LossFixture::HotPixel(item, 0, 8);
  const auto hot = [&](const QImage& image) {
    return At(image, c.x + (hx + 0.5f) * c.w / 8, c.y + (hy + 0.5f) * c.h / 8).rgb() & 0xFFFFFF;
  };
  EXPECT_EQ(hot(own), LossModel::ContributionColor(1) & 0xFFFFFF);
  const int own_red = Count(own, c, Reddish);

  state.loss.SetMapScaling(MapScaling::kShared);
  const QImage shared = Render(&state, "monitoring", 1400, 700, "loss-monitoring-shared");
  EXPECT_NE(hot(shared), LossModel::ContributionColor(1) & 0xFFFFFF);
  EXPECT_LT(Count(shared, c, Reddish), own_red);

  state.loss.SetMapScaling(MapScaling::kLog);
  const QImage log = Render(&state, "monitoring", 1400, 700, "loss-monitoring-log");
  EXPECT_GT(Count(log, c, Reddish), Count(shared, c, Reddish));

  // The control in the view sets the model's scaling.
  MonitoringView view(&state.loss);
  auto* combo = view.findChild<QComboBox*>("map_scaling");
  ASSERT_NE(combo, nullptr);
  EXPECT_EQ(combo->currentData().toInt(), static_cast<int>(MapScaling::kLog));
  combo->setCurrentIndex(combo->findData(static_cast<int>(MapScaling::kPerIteration)));
  EXPECT_EQ(state.loss.map_scaling(), MapScaling::kPerIteration);
}

TEST_F(LossViewsOffscreenTest, WithoutLossDataBothViewsShowThePlaceholder) {
  ViewerState state;
  for (const std::string view : {"selection", "monitoring"}) {
    const QImage image = Render(&state, view, 1000, 500, "loss-empty-" + view);
    ASSERT_EQ(image.width(), 1000);
    // Text in the middle band, nothing coloured anywhere: no map, no frame.
    int text = 0, coloured = 0;
    for (int y = 0; y < image.height(); y += 2) {
      for (int x = 0; x < image.width(); x += 2) {
        const QColor c = image.pixelColor(x, y);
        if (y > 200 && y < 280 && c.lightness() < 160) ++text;
        coloured += Reddish(c) || Bluish(c);
      }
    }
    EXPECT_GT(text, 100) << view;
    EXPECT_EQ(coloured, 0) << view;
  }
}

TEST_F(LossViewsOffscreenTest, TheWindowsLossTabShowsBothViews) {
  ViewerState state;
  LoadStored(&state);
  const QImage image = Render(&state, "all", 1600, 1000, "loss-window");
  int red = 0, blue = 0;
  for (int y = 0; y < image.height(); y += 2) {
    for (int x = 0; x < image.width(); x += 2) {
      red += CandidateRed(image.pixelColor(x, y));
      blue += Bluish(image.pixelColor(x, y));
    }
  }
  EXPECT_GT(red, 100);   // candidate frames
  EXPECT_GT(blue, 100);  // reduction maps
}

}  // namespace
}  // namespace trainscope::viewer

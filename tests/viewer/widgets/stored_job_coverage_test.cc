// A real trace (rank 0 of a 2-rank NCCL job, 3 steps, 2.7 k kernels,
// kineto-gpu) imported and opened with a --max-operators below its size:
// the loader says what it left out (newest whole steps kept), a --steps
// range loads an older step, and the window shows the notice above the
// views (issue 23.5: a stored job silently lost its oldest operators).
#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "test_application.h"
#include "trainscope/collector/import/trace_importer.h"
#include "trainscope/viewer/stored_job_loader.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/elided_label.h"
#include "trainscope/viewer/widgets/main_window.h"

namespace trainscope::viewer {
namespace {

class StoredJobCoverageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::EnsureApplication();
    const std::filesystem::path trace =
        std::filesystem::path(KINETO_GPU_DATA) / "nccl_parser_config__nccl_data.json.gz";
    ASSERT_TRUE(std::filesystem::exists(trace)) << trace << " is missing";
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("trainscope-coverage-" + std::to_string(::getpid())));
    std::filesystem::remove_all(*dir_);
    auto importer =
        collector::TraceImporter::Create({.data_dir = *dir_, .job_id = "nccl", .fsync = false});
    ASSERT_TRUE(importer.ok()) << importer.status();
    ASSERT_TRUE((*importer)->Import({{.path = trace.string()}}).ok());
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  static std::filesystem::path* dir_;
};
std::filesystem::path* StoredJobCoverageTest::dir_ = nullptr;

TEST_F(StoredJobCoverageTest, TheWholeJobFitsAndSaysNothing) {
  absl::StatusOr<JobData> data = LoadStoredJob(*dir_, "nccl", {});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_FALSE(data->coverage.cut()) << data->coverage.Notice();
  EXPECT_GT(data->operators.operators.size(), 1000u);
}

TEST_F(StoredJobCoverageTest, ACutIsSaidWithTheNumbersAndARangeLoadsOlderSteps) {
  absl::StatusOr<JobData> all = LoadStoredJob(*dir_, "nccl", {});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_GE(all->steps.size(), 2u);
  const uint64_t total = all->operators.operators.size();
  const uint64_t first = all->steps.front().step, last = all->steps.back().step;

  StoredJobOptions small;
  small.max_operators = static_cast<uint32_t>(total / 2);
  absl::StatusOr<JobData> cut = LoadStoredJob(*dir_, "nccl", small);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_TRUE(cut->coverage.cut());
  EXPECT_LE(cut->operators.operators.size(), small.max_operators);
  EXPECT_GT(cut->operators.operators.size(), 0u);
  ASSERT_TRUE(cut->coverage.total().has_value());
  EXPECT_GE(*cut->coverage.total(), total);
  const std::string notice = cut->coverage.Notice();
  EXPECT_NE(notice.find(OperatorCoverage::Grouped(cut->operators.operators.size())),
            std::string::npos)
      << notice;
  EXPECT_NE(notice.find("--max-operators " + OperatorCoverage::Grouped(small.max_operators)),
            std::string::npos)
      << notice;
  EXPECT_NE(notice.find("--steps"), std::string::npos) << notice;
  // The newest steps are kept: the oldest step's operators are gone.
  uint64_t oldest_loaded = UINT64_MAX;
  for (const OperatorRecord& op : cut->operators.operators)
    oldest_loaded = std::min(oldest_loaded, op.step);
  EXPECT_GT(oldest_loaded, first);

  // A range of the oldest step alone brings it back.
  StoredJobOptions range = small;
  range.steps = std::make_pair(first, first);
  absl::StatusOr<JobData> old = LoadStoredJob(*dir_, "nccl", range);
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_FALSE(old->operators.operators.empty());
  bool has_first = false;
  for (const OperatorRecord& op : old->operators.operators) has_first |= op.step == first;
  EXPECT_TRUE(has_first);
  ASSERT_EQ(old->steps.size(), 1u);
  EXPECT_EQ(old->steps.front().step, first);

  // A range outside the job names the job's steps.
  range.steps = std::make_pair(last + 100, last + 200);
  absl::StatusOr<JobData> none = LoadStoredJob(*dir_, "nccl", range);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("its steps are"), std::string::npos)
      << none.status();

  // The window shows the notice above the views, drawn (dark text on its
  // yellow band).
  ViewerState state;
  state.Load(*cut);
  MainWindow::Config config;
  config.controls.job_id = "nccl";
  config.load_notice = notice;
  MainWindow window(&state, nullptr, config);
  window.setAttribute(Qt::WA_DontShowOnScreen);
  window.resize(1600, 900);
  window.show();
  QApplication::processEvents();
  QLabel* label = window.load_notice_label();
  ASSERT_NE(label, nullptr);
  EXPECT_TRUE(label->isVisible());
  EXPECT_EQ(label->text().toStdString(), notice);
  const QImage image = label->grab().toImage();
  int yellow = 0, dark = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      if (c.red() > 240 && c.green() > 230 && c.blue() < 215) ++yellow;
      if (qGray(c.rgb()) < 100) ++dark;
    }
  }
  EXPECT_GT(yellow, image.width() * image.height() / 2);
  EXPECT_GT(dark, 100);
  if (const char* out = std::getenv("VIEWER_TEST_SAVE")) {
    window.grab().toImage().save(QString(out) + "/stored-job-cut.png");
  }
  window.hide();
}

// The band's steps field loads a range in the window (issue 23.5: let the
// user load a range): the oldest step, cut off by --max-operators, comes
// back without restarting; a bad range is said and what was shown stays.
TEST_F(StoredJobCoverageTest, TheBandsStepsFieldLoadsARangeInTheWindow) {
  absl::StatusOr<JobData> all = LoadStoredJob(*dir_, "nccl", {});
  ASSERT_TRUE(all.ok()) << all.status();
  const uint64_t first = all->steps.front().step, last = all->steps.back().step;
  StoredJobOptions small;
  small.max_operators = static_cast<uint32_t>(all->operators.operators.size() / 2);
  absl::StatusOr<JobData> cut = LoadStoredJob(*dir_, "nccl", small);
  ASSERT_TRUE(cut.ok()) << cut.status();
  ASSERT_TRUE(cut->coverage.cut());

  ViewerState state;
  state.Load(*cut);
  MainWindow::Config config;
  config.controls.job_id = "nccl";
  config.load_notice = cut->coverage.Notice();
  std::vector<StepSpan> asked;
  config.load_steps = [&](StepSpan span) {
    asked.push_back(span);
    StoredJobOptions range = small;
    range.steps = std::make_pair(span.first, span.last);
    return LoadStoredJob(*dir_, "nccl", range);
  };
  MainWindow window(&state, nullptr, config);
  window.setAttribute(Qt::WA_DontShowOnScreen);
  window.resize(1600, 900);
  window.show();
  QApplication::processEvents();
  QLineEdit* field = window.load_steps_field();
  ASSERT_NE(field, nullptr);
  auto* button = window.findChild<QPushButton*>("load_steps_button");
  ASSERT_NE(button, nullptr);
  EXPECT_TRUE(button->isVisible());

  // Not a range: said in the status bar, nothing loaded.
  field->setText("oldest");
  button->click();
  EXPECT_TRUE(asked.empty());
  EXPECT_NE(window.notice_label()->full_text().toStdString().find("steps"), std::string::npos)
      << window.notice_label()->full_text().toStdString();
  EXPECT_EQ(state.overview.step_count(), cut->steps.size());

  // A range outside the job: the loader's error names the job's steps.
  field->setText(QString("%1-%2").arg(last + 100).arg(last + 200));
  button->click();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_NE(window.notice_label()->full_text().toStdString().find("its steps are"),
            std::string::npos)
      << window.notice_label()->full_text().toStdString();
  EXPECT_EQ(state.overview.step_count(), cut->steps.size());

  // The oldest step: loaded and shown, the band says what is loaded now.
  field->setText(QString("%1-%1").arg(first));
  button->click();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked.back(), (StepSpan{first, first}));
  EXPECT_EQ(state.overview.step_count(), 1u);
  EXPECT_EQ(state.selection.selected_step(), first);
  ASSERT_EQ(state.marey.store().steps().size(), 1u);
  EXPECT_EQ(state.marey.store().steps().begin()->first, first);
  EXPECT_GT(state.marey.store().operator_count(), 0u);
  const std::string band = window.load_notice_label()->text().toStdString();
  EXPECT_NE(band, config.load_notice);
  EXPECT_NE(band.find(std::to_string(first)), std::string::npos) << band;
  window.hide();
}

}  // namespace
}  // namespace trainscope::viewer

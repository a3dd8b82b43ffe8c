#include "trainscope/collector/ingest/loss_report_validator.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

v1::EventBatch BatchWithGoodReport() {
  v1::EventBatch batch;
  batch.set_sequence(7);
  v1::LossReport* report = batch.add_loss_reports();
  report->set_selection_layer("layer4");
  report->add_monitored_layers("layer1");
  report->set_top_n(2);
  v1::ItemScore* score = report->add_top();
  score->set_item(12);
  score->set_contribution(0.5);
  score->set_label(3);
  score->set_prediction(-1);
  v1::ItemSnapshot* snapshot = report->add_snapshots();
  snapshot->set_item(12);
  snapshot->set_label(3);
  snapshot->set_prediction(5);
  v1::Thumbnail* input = snapshot->mutable_input();
  input->set_height(2);
  input->set_width(3);
  input->set_channels(1);
  input->set_pixels(std::string(6, '\x7f'));
  v1::LayerMap* map = snapshot->add_maps();
  map->set_layer("layer1");
  map->set_height(4);
  map->set_width(2);
  map->set_contribution(std::string(16, '\0'));
  map->set_reduction(std::string(16, '\0'));
  return batch;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(LossReportValidatorTest, AcceptsAWellFormedReport) {
  EXPECT_TRUE(ValidateLossReports(BatchWithGoodReport()).ok());
}

TEST(LossReportValidatorTest, MapBytesMustMatchTheShape) {
  v1::EventBatch batch = BatchWithGoodReport();
  batch.mutable_loss_reports(0)->mutable_snapshots(0)->mutable_maps(0)->set_reduction(
      std::string(15, '\0'));
  const absl::Status s = ValidateLossReports(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "batch 7: loss_reports[0].snapshots[0].maps[0].reduction has 15 bytes, expected 16 "
            "(4 x 2 half floats)");
}

TEST(LossReportValidatorTest, ThumbnailMustMatchItsShapeAndChannels) {
  v1::EventBatch batch = BatchWithGoodReport();
  v1::Thumbnail* input = batch.mutable_loss_reports(0)->mutable_snapshots(0)->mutable_input();
  input->set_channels(2);
  EXPECT_THAT(Message(ValidateLossReports(batch)), HasSubstr("1 or 3 channels"));
  input->set_channels(3);
  EXPECT_THAT(Message(ValidateLossReports(batch)),
              HasSubstr("input.pixels has 6 bytes, expected 18 (2 x 3 x 3)"));
}

TEST(LossReportValidatorTest, AListedItemsThumbnailIsCheckedToo) {
  v1::EventBatch batch = BatchWithGoodReport();
  v1::Thumbnail* input = batch.mutable_loss_reports(0)->mutable_top(0)->mutable_input();
  input->set_height(2);
  input->set_width(2);
  input->set_channels(1);
  input->set_pixels(std::string(4, '\x10'));
  EXPECT_TRUE(ValidateLossReports(batch).ok());
  input->set_height(300);
  EXPECT_THAT(Message(ValidateLossReports(batch)),
              HasSubstr("loss_reports[0].top[0].input is 300 x 2 x 1; expected 1 to 256"));
}

TEST(LossReportValidatorTest, ScoresMustBeFiniteAndClassesAtLeastMinusOne) {
  v1::EventBatch batch = BatchWithGoodReport();
  batch.mutable_loss_reports(0)->mutable_top(0)->set_contribution(
      std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(Message(ValidateLossReports(batch)),
              HasSubstr("loss_reports[0].top[0].contribution is nan; expected a finite number"));
  batch = BatchWithGoodReport();
  batch.mutable_loss_reports(0)->mutable_top(0)->set_label(-2);
  EXPECT_THAT(Message(ValidateLossReports(batch)), HasSubstr("has label -2"));
}

TEST(LossReportValidatorTest, CountsAreBounded) {
  LossReportLimits limits;
  limits.max_top_n = 1;
  v1::EventBatch batch = BatchWithGoodReport();
  batch.mutable_loss_reports(0)->add_top();
  EXPECT_THAT(Message(ValidateLossReports(batch, limits)),
              HasSubstr("loss_reports[0].top has top_n 2 and 2 items; at most 1"));
  limits = {};
  limits.max_reports = 1;
  batch = BatchWithGoodReport();
  batch.add_loss_reports();
  EXPECT_THAT(Message(ValidateLossReports(batch, limits)),
              HasSubstr("loss_reports has 2 reports; at most 1 per batch"));
  limits = {};
  limits.max_map_side = 3;
  EXPECT_THAT(Message(ValidateLossReports(BatchWithGoodReport(), limits)),
              HasSubstr("maps[0] is 4 x 2; expected 1 to 3 pixels per side"));
}

}  // namespace
}  // namespace trainscope::collector

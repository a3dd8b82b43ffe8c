#include "trainscope/viewer/alerts_model.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

Alert MakeAlert(uint64_t step, uint32_t rank, const std::string& op) {
  Alert alert;
  alert.job = "job";
  alert.step = step;
  alert.ranks = {rank};
  alert.op = op;
  alert.metric = "compute_ms";
  alert.value = 12.5;
  alert.baseline = 8;
  alert.rule = "straggler";
  alert.text = "slow";
  return alert;
}

TEST(AlertsModelTest, RowsNewestFirst) {
  AlertsModel alerts;
  alerts.Add(MakeAlert(3, 1, "a"));
  alerts.Add(MakeAlert(9, 2, "b"));
  auto rows = alerts.Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, "9");
  EXPECT_EQ(rows[0].ranks, "2");
  EXPECT_EQ(rows[0].value, "compute_ms: 12.5 (baseline 8)");
  EXPECT_EQ(rows[1].step, "3");
}

TEST(AlertsModelTest, SelectingPinsTheStepAndFocusesTheMareyGraph) {
  NameTable names;
  MareyModel marey(&names);
  std::vector<OperatorRecord> ops;
  for (uint64_t step = 1; step <= 20; ++step) {
    for (uint32_t r = 0; r < 3; ++r) {
      OperatorRecord op;
      op.rank = r;
      op.step = step;
      op.start_ns = static_cast<int64_t>(step) * 1'000'000;
      op.end_ns = op.start_ns + 300'000;
      op.raw_start_ns = op.start_ns;
      op.raw_end_ns = op.end_ns;
      op.name = names.Intern("conv");
      ops.push_back(op);
    }
  }
  marey.AddOperators(ops);
  marey.SetViewport(1000, 500);
  marey.Draw();
  SelectionState selection;
  selection.OnStepClosed(20);
  AlertsModel alerts;
  alerts.Add(MakeAlert(4, 1, "conv"));
  alerts.Add(MakeAlert(11, 2, "conv"));
  const Alert* chosen = alerts.Select(1, &selection, &marey);  // the older one
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->step, 4u);
  EXPECT_EQ(selection.selected_step(), 4u);
  EXPECT_FALSE(selection.following());
  marey.Draw();
  EXPECT_LE(marey.view_start(), 4'000'000);
  EXPECT_GE(marey.view_end(), 4'300'000);
  EXPECT_LT(marey.view_end() - marey.view_start(), 2'000'000);
  EXPECT_EQ(alerts.Select(5, &selection, &marey), nullptr);
}

TEST(AlertsModelTest, BoundedList) {
  AlertsModel alerts(3);
  for (uint64_t s = 1; s <= 5; ++s) alerts.Add(MakeAlert(s, 0, ""));
  EXPECT_EQ(alerts.size(), 3u);
  EXPECT_EQ(alerts.AtRow(2)->step, 3u);
}

TEST(AlertsModelTest, NanosecondMetricsShowAsDurations) {
  AlertsModel model(8);
  Alert alert;
  alert.metric = "own_ns";
  alert.value = 29.4e6;
  alert.baseline = 18.1e6;
  model.Add(alert);
  const std::string value = model.Rows()[0].value;
  EXPECT_EQ(value.find("e+07"), std::string::npos) << value;
  EXPECT_NE(value.find("ms"), std::string::npos) << value;
}

}  // namespace
}  // namespace trainscope::viewer

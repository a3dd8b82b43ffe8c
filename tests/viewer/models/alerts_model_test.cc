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
  EXPECT_EQ(rows[0].value, "compute time 12.5 ms (baseline 8.00 ms, +56 %)");
  EXPECT_EQ(rows[1].step, "3");
}

// Linked selection: rows of alerts naming a device selected in another view
// are marked, whichever of the alert's ranks it is.
TEST(AlertsModelTest, RowsNamingASelectedDeviceAreMarked) {
  AlertsModel alerts;
  alerts.Add(MakeAlert(3, 1, "a"));
  Alert link = MakeAlert(4, 0, "");
  link.rule = "slow_link";
  link.ranks = {0, 2};
  alerts.Add(link);
  alerts.Add(MakeAlert(5, 3, "c"));
  for (const auto& row : alerts.Rows()) EXPECT_FALSE(row.selected_devices) << row.step;
  const uint64_t version = alerts.version();
  alerts.SetSelectedRanks({2});
  EXPECT_NE(alerts.version(), version);  // the list redraws
  auto rows = alerts.Rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].selected_devices);  // rank 3
  EXPECT_TRUE(rows[1].selected_devices);   // the link 0 -> 2
  EXPECT_FALSE(rows[2].selected_devices);  // rank 1
  alerts.SetSelectedRanks({1, 3});
  rows = alerts.Rows();
  EXPECT_TRUE(rows[0].selected_devices);
  EXPECT_FALSE(rows[1].selected_devices);
  EXPECT_TRUE(rows[2].selected_devices);
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

Alert Perf(uint64_t id, uint64_t step, const std::string& rule, std::vector<uint32_t> ranks,
           int64_t cause) {
  Alert alert;
  alert.alert_id = id;
  alert.step = step;
  alert.rule = rule;
  alert.ranks = std::move(ranks);
  alert.cause = cause;
  alert.metric = "step_time_ns";
  alert.value = 88.1e6;
  alert.baseline = 55e6;
  alert.text = rule + " at step " + std::to_string(step);
  return alert;
}

Alert Item(uint64_t id, uint64_t step, uint64_t item) {
  Alert alert;
  alert.alert_id = id;
  alert.step = step;
  alert.rule = "difficult_item";
  alert.ranks = {0};
  alert.cause = 0;
  alert.item = item;
  alert.text = "item " + std::to_string(item) + " is difficult";
  return alert;
}

TEST(AlertsModelTest, ValueNamesTheMetricWithItsUnitAndChange) {
  EXPECT_EQ(AlertsModel::MetricName("own_ns"), "own time");
  EXPECT_EQ(AlertsModel::MetricName("step_time_ns"), "step time");
  EXPECT_EQ(AlertsModel::MetricName("queue_depth"), "queue depth");
  EXPECT_EQ(AlertsModel::MetricName("launch_gap_ns"), "launch gap time");
  AlertsModel model;
  model.Add(Perf(1, 33, "step_time_regression", {0, 1, 2, 3}, -1));
  Alert wait = Perf(2, 34, "collective_wait", {2, 0}, 2);
  wait.metric = "wait_fraction";
  wait.value = 0.45;
  wait.baseline = 0.1;
  model.Add(wait);
  const auto rows = model.Rows();
  EXPECT_EQ(rows[1].value, "step time 88.1 ms (baseline 55.0 ms, +60 %)");
  EXPECT_EQ(rows[0].value, "wait share 45 % (baseline 10 %)");
  for (const auto& row : rows) EXPECT_EQ(row.value.find("_ns"), std::string::npos) << row.value;
}

TEST(AlertsModelTest, RanksNameTheCauseOrSayThereIsNone) {
  AlertsModel model;
  model.Add(Perf(1, 33, "step_time_regression", {0, 1, 2, 3}, -1));
  model.Add(Perf(2, 31, "straggler", {2, 0, 1, 3}, 2));
  const auto rows = model.Rows();
  EXPECT_EQ(rows[0].ranks, "2 (cause); also 0, 1, 3");
  EXPECT_EQ(rows[1].ranks, "0, 1, 2, 3 (no single cause)");
}

TEST(AlertsModelTest, AClearClosesItsRaiseWithTheDuration) {
  AlertsModel model;
  Alert raised = Perf(7, 31, "straggler", {2}, 2);
  raised.onset_step = 30;
  raised.changed_unix_ns = 1'000'000'000;
  model.Add(raised);
  model.Add(Perf(8, 40, "loader_stall", {1}, 1));
  model.SetNewestStep(50);
  auto rows = model.Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].state, "raised");
  EXPECT_FALSE(rows[1].cleared);
  EXPECT_EQ(rows[1].duration, "open since step 30 (20 steps)");
  const uint64_t version = model.version();
  Alert cleared = raised;
  cleared.state = AlertState::kCleared;
  cleared.step = 45;
  cleared.changed_unix_ns = 2'500'000'000;
  model.Add(cleared);
  EXPECT_GT(model.version(), version);
  rows = model.Rows();
  ASSERT_EQ(rows.size(), 2u) << "a clear closes its raise's row, it adds none";
  EXPECT_EQ(rows[1].state, "cleared");
  EXPECT_TRUE(rows[1].cleared);
  EXPECT_EQ(rows[1].duration,
            "steps 30\xE2\x80\x93"
            "45 (15 steps, 1.50 s)");
  EXPECT_NE(rows[1].details.find("cleared"), std::string::npos);
  EXPECT_EQ(rows[0].state, "raised");  // the other alert is untouched
  // A clear whose raise is unknown still shows, as cleared.
  Alert orphan = Perf(99, 60, "slow_link", {0, 1}, -1);
  orphan.state = AlertState::kCleared;
  model.Add(orphan);
  EXPECT_EQ(model.Rows()[0].state, "cleared");
  EXPECT_EQ(model.size(), 3u);
}

TEST(AlertsModelTest, ItemAlertsAreGroupedApartFromPerformanceAlerts) {
  AlertsModel model;
  uint64_t id = 1;
  for (uint64_t i = 0; i < 199; ++i) model.Add(Item(id++, 10 + i, 800 + i));
  for (uint64_t s = 0; s < 10; ++s) model.Add(Perf(id++, 20 + s * 5, "straggler", {2}, 2));
  model.Add(Item(id++, 300, 7));
  const auto groups = model.Groups({});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].kind, AlertsModel::Kind::kPerformance);
  EXPECT_EQ(groups[0].rows.size(), 10u);
  EXPECT_EQ(groups[0].title, "Performance: 10 alerts, 10 open");
  EXPECT_EQ(groups[1].kind, AlertsModel::Kind::kItem);
  EXPECT_EQ(groups[1].rows.size(), 200u);
  EXPECT_EQ(groups[1].rows[0].step, "300");  // newest first within a group
  // Each row's index selects that very alert.
  for (const auto& group : groups) {
    for (const auto& row : group.rows)
      EXPECT_EQ(model.AtRow(row.index)->step, std::stoull(row.step));
  }
}

TEST(AlertsModelTest, FiltersByRuleRankAndKind) {
  AlertsModel model;
  model.Add(Perf(1, 31, "straggler", {2, 0, 1, 3}, 2));
  model.Add(Perf(2, 33, "step_time_regression", {0, 1, 2, 3}, -1));
  model.Add(Perf(3, 40, "loader_stall", {1}, 1));
  model.Add(Item(4, 41, 868));
  EXPECT_EQ(model.Rules(), (std::vector<std::string>{"difficult_item", "loader_stall",
                                                     "step_time_regression", "straggler"}));
  EXPECT_EQ(model.Ranks(), (std::vector<uint32_t>{0, 1, 2, 3}));
  auto count = [&](const AlertsModel::Filter& f) {
    size_t n = 0;
    for (const auto& g : model.Groups(f)) n += g.rows.size();
    return n;
  };
  EXPECT_EQ(count({}), 4u);
  EXPECT_EQ(count({"straggler", std::nullopt, std::nullopt}), 1u);
  EXPECT_EQ(count({"", 1u, std::nullopt}), 3u);  // every performance alert; the item is on 0
  EXPECT_EQ(count({"", 3u, std::nullopt}), 2u);
  EXPECT_EQ(count({"", std::nullopt, AlertsModel::Kind::kItem}), 1u);
  EXPECT_EQ(count({"", std::nullopt, AlertsModel::Kind::kPerformance}), 3u);
  EXPECT_EQ(count({"loader_stall", 3u, std::nullopt}), 0u);
  EXPECT_TRUE(model.Groups({"nope", std::nullopt, std::nullopt}).empty());
}

TEST(AlertsModelTest, AlertStepsAreThePerformanceRaisesOnceEach) {
  AlertsModel model;
  model.Add(Perf(1, 40, "straggler", {2}, 2));
  model.Add(Perf(2, 31, "collective_wait", {2, 0}, 2));
  model.Add(Perf(3, 40, "loader_stall", {1}, 1));
  model.Add(Item(4, 35, 868));
  Alert cleared = Perf(1, 50, "straggler", {2}, 2);
  cleared.state = AlertState::kCleared;
  model.Add(cleared);
  EXPECT_EQ(model.AlertSteps(), (std::vector<uint64_t>{31, 40}));
}

TEST(AlertsModelTest, DetailsCarryTheWholeMessage) {
  AlertsModel model;
  Alert alert = Perf(1, 31, "straggler", {2, 0}, 2);
  alert.text = std::string(400, 'x') + " the end of a long sentence";
  model.Add(alert);
  const auto row = model.Rows()[0];
  EXPECT_EQ(row.text, alert.text);
  EXPECT_EQ(row.details.rfind(alert.text, 0), 0u);  // first, in full
  EXPECT_NE(row.details.find("ranks: 2 (cause); also 0"), std::string::npos);
}

}  // namespace
}  // namespace trainscope::viewer

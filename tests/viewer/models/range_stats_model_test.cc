#include "trainscope/viewer/range_stats_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/range_stats_fixture.h"

namespace trainscope::viewer {
namespace {

using RangeStatsModelTest = RangeStatsFixture;

constexpr int64_t kSecond = 1'000'000'000;

TEST_F(RangeStatsModelTest, ShowsTheWholeJobUntilARangeIsSelected) {
  RangeStatsModel model;
  EXPECT_TRUE(model.Update(store_, names_, 0));
  EXPECT_TRUE(model.statistics().whole_job);
  EXPECT_EQ(model.statistics().total.wall_ns, 600);
  EXPECT_EQ(model.marked_time_range(), std::nullopt);
  EXPECT_EQ(model.top().rows().size(), 5u);

  // A drag from 60 to 240 ns mostly covers step 2 only.
  const uint64_t before = model.version();
  ASSERT_TRUE(model.SelectTimeRange(store_.steps(), 240, 60));
  EXPECT_EQ(model.span(), (StepSpan{2, 2}));
  EXPECT_NE(model.version(), before);
  EXPECT_TRUE(model.Update(store_, names_, 1));  // a new range: at once
  EXPECT_EQ(model.statistics().total.wall_ns, 200);
  EXPECT_EQ(model.marked_time_range(), (std::pair<int64_t, int64_t>{100, 200}));
  // The top operators follow the range: B's self time in step 2 is 50 + 70.
  const int b = model.top().Find(b_);
  ASSERT_GE(b, 0);
  EXPECT_EQ(model.top().rows()[b].self_ns, 120);
  EXPECT_DOUBLE_EQ(model.top().rows()[b].share, 120.0 / 200);

  // Nothing there: the selection stays.
  EXPECT_FALSE(model.SelectTimeRange(store_.steps(), 1000, 2000));
  EXPECT_EQ(model.span(), (StepSpan{2, 2}));

  model.SelectSteps(3, 1);
  EXPECT_EQ(model.span(), (StepSpan{1, 3}));
  EXPECT_EQ(model.marked_time_range(), std::nullopt);  // not computed yet
  EXPECT_TRUE(model.Update(store_, names_, 2));
  EXPECT_EQ(model.marked_time_range(), (std::pair<int64_t, int64_t>{0, 300}));
  model.Clear();
  EXPECT_TRUE(model.Update(store_, names_, 3));
  EXPECT_TRUE(model.statistics().whole_job);
}

TEST_F(RangeStatsModelTest, NewDataIsCountedAtMostEveryTwoSeconds) {
  RangeStatsModel model;
  ASSERT_TRUE(model.Update(store_, names_, 10 * kSecond));
  EXPECT_FALSE(model.Update(store_, names_, 20 * kSecond));  // nothing new
  EXPECT_EQ(model.statistics().total.operators, 10u);
  store_.AddOperators({Op(0, 300, 350, a_, 4)});
  EXPECT_FALSE(model.Update(store_, names_, 11 * kSecond));  // too soon
  EXPECT_EQ(model.statistics().total.operators, 10u);
  EXPECT_TRUE(model.Update(store_, names_, 12 * kSecond));
  EXPECT_EQ(model.statistics().total.operators, 11u);
  // A new step counts as new data too.
  StepRecord step;
  step.step = 4;
  step.start_ns = 300;
  step.end_ns = 400;
  DeviceStepRecord device;
  device.step_time_ns = 100;
  device.compute_ns = 100;
  step.devices.push_back(device);
  store_.AddStep(step);
  EXPECT_TRUE(model.Update(store_, names_, 15 * kSecond));
  EXPECT_EQ(model.statistics().last_step, 4u);
  EXPECT_EQ(model.statistics().total.wall_ns, 700);
}

TEST_F(RangeStatsModelTest, NamesTheRangeAndWritesEachDeviceAndTheTotalAsText) {
  RangeStatsModel model;
  model.SelectSteps(2, 3);
  ASSERT_TRUE(model.Update(store_, names_, 0));
  EXPECT_EQ(model.Title(),
            "Selected steps 2\xE2\x80\x93"
            "3 \xC2\xB7 2 steps \xC2\xB7 200 ns \xC2\xB7 2 devices");
  const std::vector<std::vector<std::string>> cells = model.DeviceCells();
  ASSERT_EQ(cells.size(), 3u);  // two devices and the total
  for (const auto& row : cells) EXPECT_EQ(row.size(), RangeStatsModel::DeviceHeaders().size());
  EXPECT_EQ(cells[0][0], "rank 0");
  EXPECT_EQ(cells[0][1], "200 ns");
  EXPECT_EQ(cells[0][2], "100 ns (50%)");  // compute
  EXPECT_EQ(cells[0][7], "-");             // no GPU work
  EXPECT_EQ(cells[1][2], "120 ns (60%)");
  EXPECT_EQ(cells[1][7].substr(0, 9), "65.0 ns (");  // kernels: 32.5 %
  EXPECT_EQ(cells[2][0], "total");
  EXPECT_EQ(cells[2][2], "220 ns (55%)");
  EXPECT_EQ(cells[2][3], "65.0 ns (16%)");  // collective wait: 16.25 %
  EXPECT_EQ(cells[2][8], "4");              // device steps
  EXPECT_EQ(cells[2][9], "9");
  const std::vector<std::string> b = RangeStatsModel::OperatorCells(model.top().rows()[0]);
  ASSERT_EQ(b.size(), RangeStatsModel::OperatorHeaders().size());
  EXPECT_EQ(b[0], "B");
  EXPECT_EQ(b[1], "compute");
  EXPECT_EQ(b[2], "3");
  EXPECT_EQ(b[5], "150 ns");
  EXPECT_EQ(b[9], "37.5 %");

  model.SelectSteps(3, 3);
  ASSERT_TRUE(model.Update(store_, names_, 0));
  EXPECT_EQ(model.Title(), "Selected step 3 \xC2\xB7 1 step \xC2\xB7 100 ns \xC2\xB7 2 devices");
  model.SelectSteps(8, 9);
  ASSERT_TRUE(model.Update(store_, names_, 0));
  EXPECT_EQ(model.Title(),
            "Selected steps 8\xE2\x80\x93"
            "9: not loaded (no step held)");
}

}  // namespace
}  // namespace trainscope::viewer

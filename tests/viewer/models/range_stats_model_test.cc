#include "trainscope/viewer/range_stats_model.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace trainscope::viewer

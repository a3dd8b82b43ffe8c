#include "trainscope/viewer/range_statistics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/range_stats_fixture.h"

namespace trainscope::viewer {
namespace {

using RangeStatisticsTest = RangeStatsFixture;

TEST_F(RangeStatisticsTest, SumsEachDevicesStepFiguresOverTheSelectedSteps) {
  const RangeStatistics::Result r = RangeStatistics::Compute(store_, StepSpan{2, 3});
  EXPECT_FALSE(r.whole_job);
  ASSERT_FALSE(r.empty);
  EXPECT_EQ(r.first_step, 2u);
  EXPECT_EQ(r.last_step, 3u);
  EXPECT_EQ(r.steps, 2u);
  EXPECT_EQ(r.start_ns, 100);
  EXPECT_EQ(r.end_ns, 300);
  ASSERT_EQ(r.ranks.size(), 2u);
  // Rank 0, steps 2 and 3 (the fixture's table): 100 + 100, 12 + 8, ...
  const RangeStatistics::Part& r0 = r.ranks[0];
  EXPECT_EQ(r0.rank, 0u);
  EXPECT_EQ(r0.steps, 2u);
  EXPECT_EQ(r0.wall_ns, 200);
  EXPECT_EQ(r0.data_wait_ns, 20);
  EXPECT_EQ(r0.compute_ns, 100);
  EXPECT_EQ(r0.collective_wait_ns, 40);
  EXPECT_EQ(r0.transfer_ns, 10);
  EXPECT_EQ(r0.idle_ns, 30);
  EXPECT_FALSE(r0.has_gpu);
  EXPECT_EQ(r0.kernel_ns, 0);
  EXPECT_EQ(r0.operators, 6u);  // B, C, C in step 2; B, C, D in step 3
  EXPECT_EQ(r0.gpu_operators, 0u);
  const RangeStatistics::Part& r1 = r.ranks[1];
  EXPECT_EQ(r1.wall_ns, 200);
  EXPECT_EQ(r1.data_wait_ns, 10);
  EXPECT_EQ(r1.compute_ns, 120);
  EXPECT_EQ(r1.collective_wait_ns, 25);
  EXPECT_EQ(r1.transfer_ns, 11);
  EXPECT_EQ(r1.idle_ns, 34);
  EXPECT_TRUE(r1.has_gpu);
  EXPECT_EQ(r1.kernel_ns, 40 + 25);
  EXPECT_EQ(r1.operators, 3u);
  EXPECT_EQ(r1.gpu_operators, 3u);
  // The total is the devices' sum.
  EXPECT_FALSE(r.total.rank.has_value());
  EXPECT_EQ(r.total.steps, 4u);
  EXPECT_EQ(r.total.wall_ns, 400);
  EXPECT_EQ(r.total.data_wait_ns, 30);
  EXPECT_EQ(r.total.compute_ns, 220);
  EXPECT_EQ(r.total.collective_wait_ns, 65);
  EXPECT_EQ(r.total.transfer_ns, 21);
  EXPECT_EQ(r.total.idle_ns, 64);
  EXPECT_TRUE(r.total.has_gpu);
  EXPECT_EQ(r.total.kernel_ns, 65);
  EXPECT_EQ(r.total.operators, 9u);
  EXPECT_EQ(r.total.gpu_operators, 3u);
}

TEST_F(RangeStatisticsTest, DevicePartsAddUpToTheTotalAndEachWallTime) {
  for (const std::optional<StepSpan>& span :
       {std::optional<StepSpan>(), std::optional<StepSpan>(StepSpan{1, 1}),
        std::optional<StepSpan>(StepSpan{1, 3})}) {
    const RangeStatistics::Result r = RangeStatistics::Compute(store_, span);
    RangeStatistics::Part sum;
    for (const RangeStatistics::Part& part : r.ranks) {
      // The fixture's step figures split each step exactly.
      EXPECT_EQ(part.data_wait_ns + part.compute_ns + part.collective_wait_ns + part.transfer_ns +
                    part.idle_ns,
                part.wall_ns);
      sum.wall_ns += part.wall_ns;
      sum.compute_ns += part.compute_ns;
      sum.idle_ns += part.idle_ns;
      sum.operators += part.operators;
      sum.gpu_operators += part.gpu_operators;
    }
    EXPECT_EQ(sum.wall_ns, r.total.wall_ns);
    EXPECT_EQ(sum.compute_ns, r.total.compute_ns);
    EXPECT_EQ(sum.idle_ns, r.total.idle_ns);
    EXPECT_EQ(sum.operators, r.total.operators);
    EXPECT_EQ(sum.gpu_operators, r.total.gpu_operators);
  }
}

TEST_F(RangeStatisticsTest, NoRangeIsTheWholeLoadedJob) {
  const RangeStatistics::Result r = RangeStatistics::Compute(store_, std::nullopt);
  EXPECT_TRUE(r.whole_job);
  EXPECT_EQ(r.first_step, 1u);
  EXPECT_EQ(r.last_step, 3u);
  EXPECT_EQ(r.steps, 3u);
  EXPECT_EQ(r.total.wall_ns, 600);
  EXPECT_EQ(r.total.compute_ns, 50 + 48 + 52 + 60 + 58 + 62);
  EXPECT_EQ(r.total.operators, 10u);  // the 9 of steps 2-3 and A in step 1
  EXPECT_EQ(r.total.gpu_operators, 3u);
}

TEST_F(RangeStatisticsTest, ARangeWithoutStepsIsEmptyButNamed) {
  const RangeStatistics::Result r = RangeStatistics::Compute(store_, StepSpan{7, 9});
  EXPECT_TRUE(r.empty);
  EXPECT_EQ(r.first_step, 7u);
  EXPECT_EQ(r.last_step, 9u);
  EXPECT_EQ(r.total.wall_ns, 0);
  EXPECT_EQ(r.total.operators, 0u);
}

TEST_F(RangeStatisticsTest, ATimeRangeSelectsTheStepsItMostlyCovers) {
  // Steps [0, 100), [100, 200), [200, 300).
  const auto& steps = store_.steps();
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 40, 260), (StepSpan{1, 3}));
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 260, 40), (StepSpan{1, 3}));
  // 40 of step 1 and 40 of step 3: less than half of either.
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 60, 240), (StepSpan{2, 2}));
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 50, 250), (StepSpan{1, 3}));
  // Inside one step: that step.
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 120, 160), (StepSpan{2, 2}));
  // Mostly in step 3, less than half of it: the step it overlaps most.
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 190, 240), (StepSpan{3, 3}));
  EXPECT_EQ(RangeStatistics::StepsInTimeRange(steps, 500, 600), std::nullopt);
}

TEST(ParseStepSpanTest, ReadsFirstDashLastAndNamesTheFlagOtherwise) {
  absl::StatusOr<StepSpan> span = ParseStepSpan("--range-steps", "100-120");
  ASSERT_TRUE(span.ok()) << span.status();
  EXPECT_EQ(*span, (StepSpan{100, 120}));
  EXPECT_EQ(*ParseStepSpan("--steps", "7-7"), (StepSpan{7, 7}));
  for (const char* bad : {"120-100", "100", "100-", "a-b", "1-2-3", ""}) {
    absl::StatusOr<StepSpan> refused = ParseStepSpan("--range-steps", bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.status().message(),
              std::string("--range-steps ") + bad +
                  ": expected FIRST-LAST, two step numbers, e.g. 100-120");
  }
}

}  // namespace
}  // namespace trainscope::viewer

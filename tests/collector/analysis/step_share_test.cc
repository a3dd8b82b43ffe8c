// StepShareVerdicts: the "share of the step above a threshold" test that
// copy_stall and launch_bound share (gpu_rules_test.cc runs the rules).
#include "trainscope/collector/analysis/step_share.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

v1::DeviceStep* AddDevice(v1::StepReport* step, uint32_t rank, int64_t step_ns, int64_t part_ns) {
  v1::DeviceStep* d = step->add_devices();
  d->set_rank(rank);
  d->set_stage(rank % 2);
  d->set_complete(true);
  d->set_has_gpu(true);
  d->set_step_time_ns(step_ns);
  d->set_copy_stall_ns(part_ns);
  return d;
}

StepShare CopyShare(int64_t min_ns, double fraction) {
  return {.rule = "copy_stall",
          .metric = "copy_stall_ns",
          .min_ns = min_ns,
          .fraction = fraction,
          .part_ns = [](const v1::DeviceStep& d) { return d.copy_stall_ns(); },
          .describe =
              [](const v1::DeviceStep& d, double part, double step_ns, RuleVerdict* v) {
                v->what = "rank " + std::to_string(d.rank());
                v->values = std::to_string(static_cast<int64_t>(part)) + "/" +
                            std::to_string(static_cast<int64_t>(step_ns));
              }};
}

TEST(StepShareTest, HoldsAtTheFractionAndIsPresentFromHalfOfIt) {
  v1::StepReport step;
  AddDevice(&step, 0, 1000, 400);  // 40%: holds at 40%
  AddDevice(&step, 1, 1000, 399);  // below the threshold, above half of it
  AddDevice(&step, 2, 1000, 199);  // below half: gone
  const std::vector<RuleVerdict> v = StepShareVerdicts(step, CopyShare(0, 0.4));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0].holds);
  EXPECT_TRUE(v[0].present);
  EXPECT_FALSE(v[1].holds);
  EXPECT_TRUE(v[1].present);
  EXPECT_FALSE(v[2].holds);
  EXPECT_FALSE(v[2].present);
}

TEST(StepShareTest, TheMinimumWinsOverASmallShareOfAShortStep) {
  v1::StepReport step;
  AddDevice(&step, 0, 1000, 900);  // 90% of a short step, under the minimum
  const std::vector<RuleVerdict> v = StepShareVerdicts(step, CopyShare(5000, 0.1));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(v[0].holds);
  EXPECT_DOUBLE_EQ(v[0].alert.threshold(), 5000);
}

TEST(StepShareTest, FillsTheAlertAndTheWordsOfTheRule) {
  v1::StepReport step;
  AddDevice(&step, 3, 2000, 1500);
  const std::vector<RuleVerdict> v = StepShareVerdicts(step, CopyShare(100, 0.5));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, RankSubject(3));
  EXPECT_EQ(v[0].alert.rule(), "copy_stall");
  EXPECT_EQ(v[0].alert.metric(), "copy_stall_ns");
  ASSERT_EQ(v[0].alert.ranks_size(), 1);
  EXPECT_EQ(v[0].alert.ranks(0), 3u);
  EXPECT_EQ(v[0].alert.cause_rank(), 3);
  EXPECT_EQ(v[0].alert.stage(), 1);
  EXPECT_DOUBLE_EQ(v[0].alert.observed(), 1500);
  EXPECT_DOUBLE_EQ(v[0].alert.baseline(), 2000);
  EXPECT_DOUBLE_EQ(v[0].alert.threshold(), 1000);
  EXPECT_EQ(v[0].what, "rank 3");
  EXPECT_EQ(v[0].values, "1500/2000");
}

TEST(StepShareTest, JudgesOnlyCompleteDevicesWithGpuWorkAndAStepTime) {
  v1::StepReport step;
  AddDevice(&step, 0, 1000, 900)->set_has_gpu(false);
  AddDevice(&step, 1, 1000, 900)->set_complete(false);
  AddDevice(&step, 2, 0, 900);
  AddDevice(&step, 3, 1000, 900);
  const std::vector<RuleVerdict> v = StepShareVerdicts(step, CopyShare(0, 0.5));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, RankSubject(3));
}

}  // namespace
}  // namespace trainscope::collector

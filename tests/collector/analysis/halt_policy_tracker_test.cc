#include "trainscope/collector/analysis/halt_policy_tracker.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

v1::HaltPolicy Policy(std::vector<std::string> rules, uint32_t k, double below = 0) {
  v1::HaltPolicy p;
  for (auto& r : rules) p.add_halt_when(r);
  p.set_for_steps(k);
  p.set_below_efficiency(below);
  p.set_enabled(true);
  return p;
}

const std::vector<std::string> kStraggler = {"straggler"};
const std::vector<std::string> kNone = {};

TEST(HaltPolicyTrackerTest, DecidesAtTheKthConsecutiveHoldingStepOnce) {
  auto tracker = HaltPolicyTracker::Create(Policy({"slow_link", "straggler"}, 5));
  ASSERT_TRUE(tracker.ok()) << tracker.status();
  for (uint64_t s = 40; s < 44; ++s) EXPECT_FALSE(tracker->OnStep(s, kStraggler, 0.9)) << s;
  std::optional<HaltDecision> d = tracker->OnStep(44, kStraggler, 0.9);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, "straggler");
  EXPECT_EQ(d->first_step, 40u);
  EXPECT_EQ(d->step, 44u);
  EXPECT_EQ(d->reason, "straggler held for 5 consecutive steps (steps 40-44)");
  EXPECT_TRUE(tracker->decided());
  EXPECT_FALSE(tracker->OnStep(45, kStraggler, 0.9));
}

TEST(HaltPolicyTrackerTest, ABreakRestartsTheCount) {
  auto tracker = HaltPolicyTracker::Create(Policy({"straggler"}, 3));
  ASSERT_TRUE(tracker.ok());
  EXPECT_FALSE(tracker->OnStep(10, kStraggler, 1));
  EXPECT_FALSE(tracker->OnStep(11, kStraggler, 1));
  EXPECT_FALSE(tracker->OnStep(12, {"slow_link"}, 1));  // not a listed rule
  EXPECT_FALSE(tracker->OnStep(13, kStraggler, 1));
  EXPECT_FALSE(tracker->OnStep(14, kStraggler, 1));
  std::optional<HaltDecision> d = tracker->OnStep(15, kStraggler, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->first_step, 13u);
}

TEST(HaltPolicyTrackerTest, AGapInStepNumbersRestartsTheCount) {
  auto tracker = HaltPolicyTracker::Create(Policy({"straggler"}, 3));
  ASSERT_TRUE(tracker.ok());
  EXPECT_FALSE(tracker->OnStep(10, kStraggler, 1));
  EXPECT_FALSE(tracker->OnStep(11, kStraggler, 1));
  EXPECT_FALSE(tracker->OnStep(13, kStraggler, 1));
  EXPECT_FALSE(tracker->OnStep(14, kStraggler, 1));
  std::optional<HaltDecision> d = tracker->OnStep(15, kStraggler, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->first_step, 13u);
}

TEST(HaltPolicyTrackerTest, KOfOneDecidesOnTheFirstHoldingStep) {
  auto tracker = HaltPolicyTracker::Create(Policy({"lost_device"}, 1));
  ASSERT_TRUE(tracker.ok());
  EXPECT_FALSE(tracker->OnStep(1, kStraggler, 1));
  std::optional<HaltDecision> d = tracker->OnStep(2, {"lost_device"}, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, "lost_device");
  EXPECT_EQ(d->first_step, 2u);
}

TEST(HaltPolicyTrackerTest, LowEfficiencyForKStepsDecides) {
  auto tracker = HaltPolicyTracker::Create(Policy({}, 3, 0.5));
  ASSERT_TRUE(tracker.ok()) << tracker.status();
  EXPECT_FALSE(tracker->OnStep(1, kNone, 0.4));
  EXPECT_FALSE(tracker->OnStep(2, kNone, 0.6));  // breaks
  EXPECT_FALSE(tracker->OnStep(3, kNone, 0.4));
  EXPECT_FALSE(tracker->OnStep(4, kNone, 0.3));
  EXPECT_FALSE(tracker->OnStep(5, kNone, -1));  // unknown: breaks too
  EXPECT_FALSE(tracker->OnStep(6, kNone, 0.3));
  EXPECT_FALSE(tracker->OnStep(7, kNone, 0.2));
  std::optional<HaltDecision> d = tracker->OnStep(8, kNone, 0.25);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, "efficiency");
  EXPECT_EQ(d->first_step, 6u);
  EXPECT_EQ(d->step, 8u);
  EXPECT_THAT(d->reason, HasSubstr("below 0.50 for 3 consecutive steps (steps 6-8"));
}

TEST(HaltPolicyTrackerTest, DisabledPolicyNeverDecides) {
  v1::HaltPolicy p = Policy({"straggler"}, 1);
  p.set_enabled(false);
  auto tracker = HaltPolicyTracker::Create(p);
  ASSERT_TRUE(tracker.ok());
  for (uint64_t s = 1; s < 10; ++s) EXPECT_FALSE(tracker->OnStep(s, kStraggler, 0));
}

TEST(HaltPolicyTrackerTest, RejectsUnknownRulesListingKnownOnes) {
  auto tracker = HaltPolicyTracker::Create(Policy({"stragler"}, 3));
  ASSERT_FALSE(tracker.ok());
  EXPECT_EQ(tracker.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tracker.status().message(), HasSubstr("stragler"));
  EXPECT_THAT(tracker.status().message(), HasSubstr("straggler, collective_wait"));
  EXPECT_TRUE(
      HaltPolicyTracker::Create(Policy({"loss_contribution"}, 3), {"loss_contribution"}).ok());
}

TEST(HaltPolicyTrackerTest, RejectsBadKAndEfficiency) {
  EXPECT_FALSE(HaltPolicyTracker::Create(Policy({"straggler"}, 0)).ok());
  EXPECT_FALSE(HaltPolicyTracker::Create(Policy({}, 3, 1.5)).ok());
  EXPECT_FALSE(HaltPolicyTracker::Create(Policy({}, 3, -0.1)).ok());
  EXPECT_TRUE(HaltPolicyTracker::Create(Policy({}, 3, 0.4)).ok());
}

TEST(StepEfficiencyTest, UsefulComputeOverStepTimeOfCompleteDevices) {
  v1::StepReport step;
  auto add = [&](int64_t compute, int64_t step_time, bool complete) {
    v1::DeviceStep* d = step.add_devices();
    d->set_compute_ns(compute);
    d->set_step_time_ns(step_time);
    d->set_complete(complete);
  };
  add(30, 100, true);
  add(50, 100, true);
  add(1000, 1000, false);
  EXPECT_DOUBLE_EQ(StepEfficiency(step), 0.4);
  EXPECT_DOUBLE_EQ(StepEfficiency(v1::StepReport()), -1);
}

}  // namespace
}  // namespace trainscope::collector

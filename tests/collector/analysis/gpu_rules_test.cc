// The GPU rules: launch_bound (launch_bound_rule.cc), copy_stall
// (copy_stall_rule.cc) and slow_kernels (slow_kernels_rule.cc), on the noisy
// synthetic job with device-time figures added to its reports.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using testing::Holding;
using testing::RunRule;
using testing::SyntheticJob;

// Adds GPU figures to every device of a report: `fraction` of the step in
// `set`'s field, and `faulty` from step `from` on gets `faulty_fraction`.
std::function<void(v1::StepReport*)> WithGpu(
    void (v1::DeviceStep::*set)(int64_t), double fraction, uint32_t faulty, uint64_t from,
    double faulty_fraction, bool has_gpu = true) {
  return [=](v1::StepReport* report) {
    for (v1::DeviceStep& d : *report->mutable_devices()) {
      d.set_has_gpu(has_gpu);
      const bool bad = d.rank() == faulty && report->step() >= from;
      (d.*set)(static_cast<int64_t>((bad ? faulty_fraction : fraction) *
                                    static_cast<double>(d.step_time_ns())));
    }
  };
}

TEST(LaunchBoundRuleTest, NamesTheDeviceWhoseHostCannotLaunchFastEnough) {
  SyntheticJob job(4, 1, 11);
  auto verdicts = RunRule(job, &MakeLaunchBoundRule, {}, 60,
                          WithGpu(&v1::DeviceStep::set_gpu_idle_launch_bound_ns, 0.05, 2, 40, 0.6));
  for (uint64_t s = 6; s < 40; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[45]), ::testing::ElementsAre("rank 0000000002"));
  for (const RuleVerdict& v : verdicts[45]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "rank 2's GPU waits for its host to launch work");
    EXPECT_EQ(v.alert.metric(), "gpu_idle_launch_bound_ns");
    EXPECT_EQ(v.alert.cause_rank(), 2);
  }
}

TEST(LaunchBoundRuleTest, DevicesWithoutGpuWorkAreNotJudged) {
  SyntheticJob job(4, 1, 12);
  auto verdicts =
      RunRule(job, &MakeLaunchBoundRule, {}, 30,
              WithGpu(&v1::DeviceStep::set_gpu_idle_launch_bound_ns, 0.6, 0, 0, 0.6, false));
  EXPECT_TRUE(verdicts[25].empty());
}

TEST(CopyStallRuleTest, NamesTheDeviceStalledOnHostDeviceCopies) {
  SyntheticJob job(4, 1, 13);
  auto verdicts = RunRule(job, &MakeCopyStallRule, {}, 60,
                          WithGpu(&v1::DeviceStep::set_copy_stall_ns, 0.02, 1, 40, 0.4));
  for (uint64_t s = 6; s < 40; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[45]), ::testing::ElementsAre("rank 0000000001"));
  for (const RuleVerdict& v : verdicts[45]) {
    if (v.holds) EXPECT_EQ(v.what, "rank 1's GPU stalls on host-device copies");
  }
}

TEST(CopyStallRuleTest, ShortCopiesAreNotAStallWhateverTheirShare) {
  SyntheticJob job(4, 1, 14);
  v1::RulesConfig rules;
  rules.mutable_copy_stall()->set_min_copy_ns(int64_t{1} << 40);  // far above any step
  auto verdicts = RunRule(job, &MakeCopyStallRule, rules, 60,
                          WithGpu(&v1::DeviceStep::set_copy_stall_ns, 0.02, 1, 40, 0.4));
  EXPECT_TRUE(Holding(verdicts[45]).empty());
}

// Every device runs the same kernels; `slow` from step `from` on runs its
// compute kernels `factor` slower. NCCL kernels of the others wait for it.
std::function<void(v1::StepReport*)> WithKernels(uint32_t slow, uint64_t from, double factor) {
  return [=](v1::StepReport* report) {
    for (v1::DeviceStep& d : *report->mutable_devices()) {
      d.set_has_gpu(true);
      const bool bad = d.rank() == slow && report->step() >= from;
      // A little spread between devices, the same every step.
      const double spread = 1.0 + 0.02 * d.rank();
      int i = 0;
      for (const char* name : {"sm90_gemm", "vectorized_elementwise", "softmax_warp_forward"}) {
        v1::KernelSummary* k = d.add_top_kernels();
        k->set_name(name);
        k->set_op_class(v1::OPERATOR_CLASS_GPU_KERNEL);
        k->set_count(10);
        k->set_total_ns(static_cast<int64_t>(10 * 100'000 * (i + 1) * spread * (bad ? factor : 1)));
        ++i;
      }
      v1::KernelSummary* nccl = d.add_top_kernels();
      nccl->set_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
      nccl->set_op_class(v1::OPERATOR_CLASS_GPU_COLLECTIVE);
      nccl->set_count(2);
      nccl->set_total_ns(d.rank() == slow || report->step() < from ? 200'000 : 2'000'000);
    }
  };
}

TEST(SlowKernelsRuleTest, NamesTheDeviceWhoseKernelsAreSlowerThanItsPeers) {
  SyntheticJob job(4, 1, 15);
  auto verdicts = RunRule(job, &MakeSlowKernelsRule, {}, 60, WithKernels(3, 40, 1.8));
  for (uint64_t s = 6; s < 40; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  // The peers' NCCL kernels are 10x longer (they wait): not a slowdown.
  EXPECT_THAT(Holding(verdicts[45]), ::testing::ElementsAre("rank 0000000003"));
  for (const RuleVerdict& v : verdicts[45]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "rank 3's kernels run slower than its peers'");
    EXPECT_NEAR(v.alert.observed(), 1.8 * 1.06 / 1.02, 0.05);
  }
}

TEST(SlowKernelsRuleTest, TooFewSharedKernelsJudgeNothing) {
  SyntheticJob job(4, 1, 16);
  v1::RulesConfig rules;
  rules.mutable_slow_kernels()->set_min_kernels(4);  // they share 3
  auto verdicts = RunRule(job, &MakeSlowKernelsRule, rules, 60, WithKernels(3, 40, 1.8));
  EXPECT_TRUE(Holding(verdicts[45]).empty());
}

}  // namespace
}  // namespace trainscope::collector

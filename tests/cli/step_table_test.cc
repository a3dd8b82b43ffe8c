#include "trainscope/cli/step_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kMs = 1'000'000;

v1::StepReport Step(uint64_t number) {
  v1::StepReport step;
  step.set_step(number);
  v1::DeviceStep* d = step.add_devices();
  d->set_step(number);
  d->set_rank(0);
  d->set_step_time_ns(200 * kMs);
  d->set_compute_ns(150 * kMs);
  d->set_idle_ns(50 * kMs);
  d->set_waited_for_rank(-1);
  return step;
}

TEST(StepTableTest, ACpuJobHasNoDeviceColumns) {
  google::protobuf::RepeatedPtrField<v1::StepReport> steps;
  *steps.Add() = Step(4);
  const std::string text = RenderStepTable(steps);
  EXPECT_THAT(text, HasSubstr("COMPUTE_MS"));
  EXPECT_THAT(text, HasSubstr("150.00"));
  EXPECT_THAT(text, Not(HasSubstr("LAUNCH_MS")));
  EXPECT_THAT(text, Not(HasSubstr("Device time")));
}

// The shape of the real nccl_parser_config trace: the GPU busy ~17 % of a
// 220 ms step, idle ~78 %, nearly all of it waiting for the CPU to launch.
TEST(StepTableTest, AGpuJobSaysWhereTheDevicesTimeWent) {
  google::protobuf::RepeatedPtrField<v1::StepReport> steps;
  for (uint64_t n : {4, 5}) {
    v1::StepReport step = Step(n);
    v1::DeviceStep* d = step.mutable_devices(0);
    d->set_has_gpu(true);
    d->set_step_time_ns(220 * kMs);
    d->set_compute_ns(38 * kMs);
    d->set_gpu_busy_ns(38 * kMs);
    d->set_collective_ns(12 * kMs);
    d->set_idle_ns(172 * kMs);
    d->set_gpu_idle_launch_bound_ns(170 * kMs);
    d->set_gpu_idle_host_sync_ns(1 * kMs / 10);  // under 1 %: not named
    d->set_other_copy_ns(1 * kMs);
    d->set_kernels(900);
    *steps.Add() = step;
  }
  const std::string text = RenderStepTable(steps);
  EXPECT_THAT(text, HasSubstr("LAUNCH_MS"));
  EXPECT_THAT(text, HasSubstr("KERNELS"));
  EXPECT_THAT(text, HasSubstr("170.00"));
  EXPECT_THAT(text, HasSubstr("rank 0: GPU busy 17% of 2 steps, NCCL 5%, copies 0%, idle 78%: "
                              "77% launch-bound (the CPU does not launch work fast enough)\n"));
  EXPECT_THAT(text, Not(HasSubstr("sync call")));
}

}  // namespace
}  // namespace trainscope::cli

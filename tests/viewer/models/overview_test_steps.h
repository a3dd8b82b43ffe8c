// Steps for the overview's tests: every device 6 ms (a slow rank 9 ms) of
// data wait, compute and communication; GPU steps add device time and top
// kernels.
#ifndef TRAINSCOPE_TESTS_VIEWER_MODELS_OVERVIEW_TEST_STEPS_H_
#define TRAINSCOPE_TESTS_VIEWER_MODELS_OVERVIEW_TEST_STEPS_H_

#include <cstdint>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

inline StepRecord MakeStep(uint64_t number, uint32_t devices, int64_t slow_rank = -1) {
  StepRecord step;
  step.step = number;
  step.start_ns = static_cast<int64_t>(number) * 10'000'000;
  step.end_ns = step.start_ns + 9'000'000;
  for (uint32_t r = 0; r < devices; ++r) {
    DeviceStepRecord d;
    d.rank = r;
    d.step_time_ns = static_cast<int>(r) == slow_rank ? 9'000'000 : 6'000'000;
    d.data_wait_ns = 1'000'000;
    d.forward_ns = 1'500'000;
    d.backward_ns = 2'500'000;
    d.collective_ns = 2'000'000 + r * 100'000;
    d.wait_ns = 500'000;
    step.devices.push_back(d);
  }
  return step;
}

inline StepRecord MakeGpuStep(uint64_t number, uint32_t devices) {
  StepRecord step = MakeStep(number, devices);
  for (DeviceStepRecord& d : step.devices) {
    d.has_gpu = true;
    d.step_time_ns = 10'000'000;
    d.gpu_busy_ns = 4'000'000;
    d.wait_ns = 1'000'000;
    d.transfer_ns = 2'000'000;
    d.comm_compute_overlap_ns = 500'000;
    d.h2d_copy_ns = 300'000;
    d.d2h_copy_ns = 200'000;
    d.gpu_idle_launch_bound_ns = 1'500'000;
    d.gpu_idle_host_sync_ns = 0;
    d.gpu_idle_data_wait_ns = 250'000;
    d.top_kernels = {
        {"sm90_gemm", OpClass::kGpuKernel, 10, 2'000'000 + d.rank, "aten::mm"},
        {"ncclDevKernel_AllReduce", OpClass::kGpuCollective, 2, 1'500'000, "nccl:all_reduce"}};
  }
  return step;
}

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_TESTS_VIEWER_MODELS_OVERVIEW_TEST_STEPS_H_

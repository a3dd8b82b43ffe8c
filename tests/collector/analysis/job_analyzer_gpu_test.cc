// JobAnalyzer with GPU work: a rank whose Hello lists GPUs has its steps
// wait for their GPU work even when it arrives after all of the host's
// events (an imported trace, a late activity buffer), and the GPU columns of
// a batch reach the step's device-time figures.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "testing/event_batch_builder.h"
#include "trainscope/collector/analysis/job_analyzer.h"

namespace trainscope::collector {
namespace {

namespace v1 = trainscope::v1;
using testing::EventBatchBuilder;

constexpr int64_t kMs = 1'000'000;
constexpr int kSteps = 4;

v1::Hello GpuHello(bool lists_gpus) {
  v1::Hello hello;
  hello.set_job_id("job");
  hello.set_rank(0);
  hello.set_world_size(1);
  if (lists_gpus) hello.add_gpus()->set_index(0);
  return hello;
}

// The host's events of every step: one operator launching one kernel.
v1::EventBatch HostBatch() {
  EventBatchBuilder b(1);
  for (int step = 0; step < kSteps; ++step) {
    const int64_t t0 = 1'000 * kMs + step * 20 * kMs;
    b.StepMark(t0, static_cast<uint64_t>(step + 1));
    b.Operator("aten::mm", t0 + 1 * kMs, t0 + 5 * kMs, v1::OPERATOR_SCOPE_FORWARD);
  }
  return b.Build();
}

// The kernels those operators launched (at t0 + 2 ms), each running 6 ms
// from t0 + 15 ms (into the next step for all but the last), all arriving
// after the host's events of every step.
v1::EventBatch GpuBatch() {
  v1::EventBatch batch;
  batch.set_sequence(2);
  batch.add_strings("");
  batch.add_strings("sm90_gemm");
  batch.add_strings("aten::mm");
  int64_t last = 0;
  for (int step = 0; step < kSteps; ++step) {
    const int64_t t0 = 1'000 * kMs + step * 20 * kMs;
    const int64_t start = t0 + 15 * kMs;
    if (step == 0) batch.set_base_time_ns(start);
    batch.add_kind(v1::EVENT_KIND_GPU_KERNEL);
    batch.add_start_delta_ns(step == 0 ? 0 : start - last);
    last = start;
    batch.add_duration_ns(static_cast<uint64_t>(6 * kMs));
    batch.add_name(1);
    batch.add_thread(0);
    batch.add_detail(0);
    batch.add_value(0);
    batch.add_gpu_device(0);
    batch.add_gpu_stream(7);
    batch.add_gpu_correlation(static_cast<uint64_t>(100 + step));
    batch.add_gpu_launch_delta_ns((t0 + 2 * kMs) - start);
    batch.add_gpu_launch_op(2);
  }
  return batch;
}

std::vector<v1::StepReport> AnalyzeJob(bool lists_gpus) {
  std::vector<v1::StepReport> steps;
  JobAnalyzerOutputs outputs;
  outputs.on_step = [&](v1::StepReport step, v1::OperatorBatch) { steps.push_back(step); };
  JobAnalyzer analyzer(JobAnalyzerOptions(), outputs);
  analyzer.OnStreamOpened(GpuHello(lists_gpus), 0);
  analyzer.OnBatch(0, HostBatch(), 0);
  analyzer.OnBatch(0, GpuBatch(), 0);
  analyzer.OnStreamClosed(0, 0);
  analyzer.Finish();
  return steps;
}

TEST(JobAnalyzerGpuTest, StepsOfARankWithGpusWaitForTheirGpuWork) {
  const std::vector<v1::StepReport> steps = AnalyzeJob(/*lists_gpus=*/true);
  ASSERT_EQ(steps.size(), static_cast<size_t>(kSteps));
  for (const v1::StepReport& s : steps) {
    ASSERT_EQ(s.devices_size(), 1) << s.step();
    const v1::DeviceStep& d = s.devices(0);
    EXPECT_TRUE(d.has_gpu()) << "step " << s.step();
    EXPECT_EQ(d.kernels(), 1u) << "step " << s.step();
    EXPECT_EQ(d.gpu_busy_ns(), 6 * kMs);
    EXPECT_EQ(d.compute_ns(), 6 * kMs);
    EXPECT_EQ(d.cpu_compute_ns(), 4 * kMs);
    ASSERT_EQ(d.top_kernels_size(), 1);
    EXPECT_EQ(d.top_kernels(0).name(), "sm90_gemm");
    EXPECT_EQ(d.top_kernels(0).launch_op(), "aten::mm");
  }
}

TEST(JobAnalyzerGpuTest, WithoutGpusInItsHelloStepsCloseBeforeLateGpuWork) {
  // The control: nothing says the rank has GPUs, its steps close as its host
  // passes them and the kernels arriving after are too late for them.
  const std::vector<v1::StepReport> steps = AnalyzeJob(/*lists_gpus=*/false);
  int with_gpu = 0;
  for (const v1::StepReport& s : steps) with_gpu += s.devices(0).has_gpu();
  EXPECT_LT(with_gpu, kSteps);
}

}  // namespace
}  // namespace trainscope::collector

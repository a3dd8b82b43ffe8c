// AgentOptions' GPU fields, in any build (with or without CUPTI).
#include <dlfcn.h>

#include "absl/strings/match.h"
#include "fake_transport.h"
#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"

namespace trainscope::agent {
namespace {

AgentOptions Options() {
  AgentOptions options;
  options.job_id = "gpu-options";
  options.flush_interval = absl::Milliseconds(2);
  options.log_to_stderr = false;
  return options;
}

absl::Status StartWith(AgentOptions options) {
  return Agent::StartWithTransport(std::move(options),
                                   std::make_unique<FakeTransport>(std::make_shared<FakeCollector>()))
      .status();
}

TEST(AgentGpuOptionsTest, BadBoundsNameTheField) {
  AgentOptions options = Options();
  options.gpu_buffer_bytes = 1024;
  EXPECT_TRUE(absl::StrContains(StartWith(options).message(), "gpu_buffer_bytes 1024"));
  options = Options();
  options.gpu_max_buffers = 0;
  EXPECT_TRUE(absl::StrContains(StartWith(options).message(), "gpu_max_buffers 0"));
  options = Options();
  options.gpu_queue_events = 1;
  EXPECT_TRUE(absl::StrContains(StartWith(options).message(), "gpu_queue_events 1"));
  options = Options();
  options.gpu_flush_interval = absl::Milliseconds(1);
  EXPECT_TRUE(absl::StrContains(StartWith(options).message(), "gpu_flush_interval 1ms"));
  options = Options();
  options.gpu_operator_depth = 65;
  EXPECT_TRUE(absl::StrContains(StartWith(options).message(), "gpu_operator_depth 65"));
}

TEST(AgentGpuOptionsTest, OffByDefaultAndUnavailableWithoutADriver) {
  auto agent = Agent::StartWithTransport(
      Options(), std::make_unique<FakeTransport>(std::make_shared<FakeCollector>()));
  ASSERT_TRUE(agent.ok());
  EXPECT_EQ((*agent)->stats().gpu_activity, GpuActivityState::kOff);
  (*agent)->GpuOperatorBegin(1, 1);  // no-ops when off
  (*agent)->GpuOperatorEnd();
  (*agent)->GpuStepBoundary();
  (*agent)->YieldGpuActivity();
  (*agent)->ResumeGpuActivity();

  if (::dlopen("libcuda.so.1", RTLD_LAZY) != nullptr) GTEST_SKIP() << "a GPU driver is present";
  AgentOptions options = Options();
  options.gpu_activity = true;
  auto collector = std::make_shared<FakeCollector>();
  auto gpu_agent =
      Agent::StartWithTransport(std::move(options), std::make_unique<FakeTransport>(collector));
  ASSERT_TRUE(gpu_agent.ok());
  const StringId op = (*gpu_agent)->Intern("aten::add");
  (*gpu_agent)->GpuCollectiveBegin(op, CollectiveKind::kAllReduce, op, 1, 64, -1);
  (*gpu_agent)->RecordOperator(op, 10, 20, 1);
  (*gpu_agent)->GpuCollectiveEnd();
  (*gpu_agent)->RecordStep(1, 30);
  (*gpu_agent)->Shutdown(absl::Seconds(10));
  const AgentStats stats = (*gpu_agent)->stats();
  EXPECT_EQ(stats.gpu_activity, GpuActivityState::kUnavailable);
  EXPECT_EQ(stats.events_acked, 2u);
  EXPECT_EQ(stats.events_recorded,
            stats.events_acked + stats.events_refused + stats.dropped_buffer_full +
                stats.dropped_shutdown);
}

}  // namespace
}  // namespace trainscope::agent

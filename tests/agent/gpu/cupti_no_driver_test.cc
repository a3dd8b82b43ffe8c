// The real libcupti of the CUDA toolkit on a machine without a GPU driver
// (CI): it loads, the tracer says once why it cannot run, and an Agent asked
// for GPU activity records everything else as usual. On a machine with a
// driver the same tests accept an active tracer instead.
#include <dlfcn.h>

#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "fake_transport.h"
#include "gpu/cupti_library_locator.h"
#include "gpu/cupti_loader.h"
#include "gpu/gpu_activity_tracer.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/agent.h"

namespace trainscope::agent {
namespace {

bool HasDriver() { return ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr ||
                          ::dlopen("libcuda.so.1", RTLD_LAZY) != nullptr; }

absl::StatusOr<CuptiLoader::Loaded> LoadSystemCupti() {
  return CuptiLoader::Load(CuptiLibraryLocator::Candidates(
      CuptiLibraryLocator::FromProcess("", CuptiLoader::CompiledMajor())));
}

int LinesWith(const std::string& text, const std::string& needle) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) n += absl::StrContains(line, needle);
  return n;
}

TEST(CuptiNoDriverTest, TheToolkitsCuptiLoads) {
  absl::StatusOr<CuptiLoader::Loaded> cupti = LoadSystemCupti();
  ASSERT_TRUE(cupti.ok()) << cupti.status();
  EXPECT_TRUE(absl::StrContains(cupti->path, "libcupti.so.13")) << cupti->path;
  EXPECT_NE(cupti->api.activity_enable, nullptr);
}

TEST(CuptiNoDriverTest, ALibraryThatIsNotThereIsNamedInTheError) {
  absl::StatusOr<CuptiLoader::Loaded> cupti =
      CuptiLoader::Load({{"/nonexistent/libcupti.so.13", "explicit"}});
  ASSERT_FALSE(cupti.ok());
  EXPECT_TRUE(absl::StrContains(cupti.status().message(), "/nonexistent/libcupti.so.13"));
  EXPECT_TRUE(absl::StrContains(cupti.status().message(), "TRAINSCOPE_CUPTI_LIBRARY"));
  // A library that is not CUPTI at all.
  cupti = CuptiLoader::Load({{"libc.so.6", "test"}});
  ASSERT_FALSE(cupti.ok());
  EXPECT_TRUE(absl::StrContains(cupti.status().message(), "no symbol cuptiGetVersion"))
      << cupti.status();
}

TEST(CuptiNoDriverTest, VersionsOfOtherCudaMajorsAreTold) {
  EXPECT_EQ(CuptiLoader::CompiledMajor(), 13);
  EXPECT_EQ(CuptiLoader::MajorOf(130001), 13);
  EXPECT_EQ(CuptiLoader::MajorOf(28), 12);
  EXPECT_EQ(CuptiLoader::MajorOf(19), 12);
  EXPECT_EQ(CuptiLoader::MajorOf(13), 11);
}

TEST(CuptiNoDriverTest, TheTracerSaysOnceWhyItCannotRun) {
  absl::StatusOr<CuptiLoader::Loaded> cupti = LoadSystemCupti();
  ASSERT_TRUE(cupti.ok()) << cupti.status();
  StringTable strings(512, 100);
  GpuEventQueue queue(64);
  std::vector<std::string> log;
  GpuActivityTracer::Sinks sinks;
  sinks.queue = &queue;
  sinks.intern = [&](std::string_view text) { return strings.Intern(text); };
  sinks.log = [&](const std::string& line) { log.push_back(line); };
  sinks.now = &Agent::Now;
  auto tracer = GpuActivityTracer::Start(cupti->api, {}, std::move(sinks));
  ASSERT_TRUE(tracer.ok()) << tracer.status();
  const GpuActivityState state = (*tracer)->counters().state;
  if (HasDriver()) {
    EXPECT_NE(state, GpuActivityState::kOff);
    return;
  }
  EXPECT_EQ(state, GpuActivityState::kUnavailable);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_TRUE(absl::StrContains(log[0], "GPU activity off")) << log[0];
  // Harmless afterwards, and never said again.
  (*tracer)->OperatorBegin(1, 1);
  (*tracer)->OperatorEnd();
  (*tracer)->StepBoundary();
  (*tracer)->Stop();
  EXPECT_EQ(log.size(), 1u);
  EXPECT_EQ(queue.pushed(), 0u);
}

TEST(CuptiNoDriverTest, AnAgentAskedForGpuActivityRecordsTheRestAsUsual) {
  if (HasDriver()) GTEST_SKIP() << "a driver is present: the no-driver path cannot be seen here";
  AgentOptions options;
  options.job_id = "gpu-no-driver";
  options.flush_interval = absl::Milliseconds(2);
  options.gpu_activity = true;
  auto collector = std::make_shared<FakeCollector>();
  testing::internal::CaptureStderr();
  auto agent = Agent::StartWithTransport(options, std::make_unique<FakeTransport>(collector));
  ASSERT_TRUE(agent.ok()) << agent.status();
  const StringId op = (*agent)->Intern("aten::mm");
  for (uint64_t i = 0; i < 100; ++i) {
    (*agent)->GpuOperatorBegin(op, i);
    (*agent)->RecordOperator(op, Agent::Now(), Agent::Now(), i);
    (*agent)->GpuOperatorEnd();
    if (i % 10 == 0) (*agent)->RecordStep(i / 10, Agent::Now());
  }
  (*agent)->Shutdown(absl::Seconds(10));
  const std::string err = testing::internal::GetCapturedStderr();
  std::cerr << err;  // the agent's own lines, for the test log
  EXPECT_EQ(LinesWith(err, "GPU activity"), 2) << err;  // what was loaded, and why it is off
  EXPECT_EQ(LinesWith(err, "GPU activity off"), 1) << err;
  const AgentStats stats = (*agent)->stats();
  EXPECT_EQ(stats.gpu_activity, GpuActivityState::kUnavailable);
  EXPECT_EQ(stats.events_acked, 110u);
  EXPECT_EQ(stats.events_recorded, 110u);
}

}  // namespace
}  // namespace trainscope::agent

// CudaDeviceQuery against a fake driver table, the stand-in driver library
// (fake_cuda_driver.c) through dlopen, and Hello.gpus from an Agent.
#include "gpu/cuda_device_query.h"

#include <cstring>

#include "absl/strings/match.h"
#include "fake_transport.h"
#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"

namespace trainscope::agent {
namespace {

int init_result = 0;
int Init(unsigned int) { return init_result; }
int Count(int* count) {
  *count = 1;
  return 0;
}
int Get(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
int NameFails(char*, int, int) { return 999; }
int Memory(size_t* bytes, int) {
  *bytes = 42;
  return 0;
}
int Attribute(int* value, int attribute, int) {
  *value = attribute == CudaDeviceQuery::kMultiprocessorCount ? 7 : 1;
  return 0;
}

CudaDriverApi FakeTable() {
  CudaDriverApi api;
  api.init = &Init;
  api.device_get_count = &Count;
  api.device_get = &Get;
  api.device_get_name = &NameFails;
  api.device_total_mem = &Memory;
  api.device_get_attribute = &Attribute;
  return api;
}

TEST(CudaDeviceQueryTest, ADeviceIsListedWithWhatCouldBeRead) {
  init_result = 0;
  absl::StatusOr<std::vector<v1::GpuDevice>> gpus = CudaDeviceQuery::List(FakeTable());
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 1u);
  const v1::GpuDevice& gpu = (*gpus)[0];
  EXPECT_EQ(gpu.index(), 0u);
  EXPECT_EQ(gpu.name(), "");  // cuDeviceGetName failed
  EXPECT_EQ(gpu.vendor(), "nvidia");
  EXPECT_EQ(gpu.memory_bytes(), 42u);
  EXPECT_EQ(gpu.multiprocessors(), 7u);
  EXPECT_EQ(gpu.compute_capability(), "1.1");
  EXPECT_EQ(gpu.peak_flops(), 0);
}

TEST(CudaDeviceQueryTest, NoUsableDriverNamesTheCall) {
  init_result = 100;  // CUDA_ERROR_NO_DEVICE
  absl::StatusOr<std::vector<v1::GpuDevice>> gpus = CudaDeviceQuery::List(FakeTable());
  ASSERT_FALSE(gpus.ok());
  EXPECT_TRUE(absl::StrContains(gpus.status().message(), "cuInit failed with CUresult 100"))
      << gpus.status();
  init_result = 0;
}

TEST(CudaDeviceQueryTest, AMissingOrForeignLibraryIsAnErrorNamingIt) {
  absl::StatusOr<CudaDriverApi> none = CudaDeviceQuery::Load("libcuda-not-here.so.1");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(absl::StrContains(none.status().message(), "libcuda-not-here.so.1"));
  absl::StatusOr<CudaDriverApi> foreign = CudaDeviceQuery::Load("libm.so.6");
  ASSERT_FALSE(foreign.ok());
  EXPECT_TRUE(absl::StrContains(foreign.status().message(), "lacks cuInit")) << foreign.status();
}

TEST(CudaDeviceQueryTest, TheStandInDriverThroughDlopen) {
  absl::StatusOr<CudaDriverApi> api = CudaDeviceQuery::Load(TRAINSCOPE_FAKE_CUDA_DRIVER);
  ASSERT_TRUE(api.ok()) << api.status();
  absl::StatusOr<std::vector<v1::GpuDevice>> gpus = CudaDeviceQuery::List(*api);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*gpus)[0].memory_bytes(), 85520809984u);
  EXPECT_EQ((*gpus)[0].multiprocessors(), 132u);
  EXPECT_EQ((*gpus)[0].compute_capability(), "9.0");
  EXPECT_EQ((*gpus)[0].peak_flops(), 989e12);
  EXPECT_EQ((*gpus)[1].index(), 1u);
  EXPECT_EQ((*gpus)[1].compute_capability(), "8.9");
  EXPECT_EQ((*gpus)[1].peak_flops(), 0);  // not in the table: unknown
}

TEST(CudaDeviceQueryTest, PeakFlopsByName) {
  EXPECT_EQ(CudaDeviceQuery::PeakBf16Flops("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(CudaDeviceQuery::PeakBf16Flops("NVIDIA H100 80GB HBM3"), 989e12);
  EXPECT_EQ(CudaDeviceQuery::PeakBf16Flops("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(CudaDeviceQuery::PeakBf16Flops("Tesla V100-SXM2-32GB"), 0);
}

v1::Hello HelloOf(AgentOptions options, bool log = false) {
  options.job_id = "gpus";
  options.flush_interval = absl::Milliseconds(2);
  options.log_to_stderr = log;
  auto collector = std::make_shared<FakeCollector>();
  auto agent =
      Agent::StartWithTransport(std::move(options), std::make_unique<FakeTransport>(collector));
  EXPECT_TRUE(agent.ok()) << agent.status();
  if (!agent.ok()) return {};
  (*agent)->Shutdown(absl::Seconds(10));
  for (const v1::AgentMessage& m : collector->Messages()) {
    if (m.has_hello()) return m.hello();
  }
  ADD_FAILURE() << "no Hello";
  return {};
}

TEST(CudaDeviceQueryTest, HelloListsTheGpusOfAGpuAgentOnly) {
  AgentOptions options;
  options.cuda_driver_library = TRAINSCOPE_FAKE_CUDA_DRIVER;
  options.gpu_activity = true;
  v1::Hello hello = HelloOf(options);
  ASSERT_EQ(hello.gpus_size(), 2);
  EXPECT_EQ(hello.gpus(0).name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(hello.gpus(1).multiprocessors(), 58u);
  // Without GPU activity the process is not a GPU rank: its steps must not
  // wait for GPU work.
  options.gpu_activity = false;
  EXPECT_EQ(HelloOf(options).gpus_size(), 0);
  // ... and says so once on stderr (how the GPU run shows them).
  options.gpu_activity = true;
  testing::internal::CaptureStderr();
  HelloOf(options, /*log=*/true);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::StrContains(
      err, "GPU devices: 0 NVIDIA H100 80GB HBM3 (81559 MiB, 132 SMs, compute 9.0); 1 NVIDIA L4"))
      << err;
  // No driver: nothing listed, the agent runs.
  options.gpu_activity = true;
  options.cuda_driver_library = "libcuda-not-here.so.1";
  EXPECT_EQ(HelloOf(options).gpus_size(), 0);
}

}  // namespace
}  // namespace trainscope::agent

#include "trainscope/collector/import/trace_importer.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/offline/stored_job_analysis.h"
#include "trainscope/collector/store/log_reader.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

class TraceImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("trainscope-import-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A legacy torch.profiler trace of one rank: `steps` 10 ms steps of two
  // operators and an all-reduce, on a clock `offset_us` from the others'.
  std::string RankTrace(int rank, int steps, double offset_us) {
    std::string text = "[";
    double t = offset_us;
    for (int s = 0; s < steps; ++s) {
      if (s > 0) text += ",";
      text += absl::StrCat(R"({"name": "ProfilerStep#)", s, R"(", "ph": "X", "ts": )", t,
                           R"(, "dur": 10000, "tid": 1, "pid": "CPU functions", "args": {}},)");
      text += absl::StrCat(R"({"name": "aten::mm", "ph": "X", "ts": )", t + 10,
                           R"(, "dur": 300, "tid": 1, "pid": "CPU functions", "args": {}},)");
      text += absl::StrCat(R"({"name": "aten::add", "ph": "X", "ts": )", t + 400,
                           R"(, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},)");
      text += absl::StrCat(R"({"name": "gloo:all_reduce", "ph": "X", "ts": )", t + 600,
                           R"(, "dur": 300, "tid": 2, "pid": "CPU functions", "args": {}})");
      t += 10'000;
    }
    text += "]";
    const std::string path = (dir_ / absl::StrCat("trace_rank", rank, ".json")).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(TraceImporterTest, RanksBecomeAJobThatTheAnalysisAssemblesAndAligns) {
  // Files from different hosts: each rank's clock is fitted.
  auto importer = TraceImporter::Create(
      {.data_dir = dir_, .job_id = "imported", .fsync = false, .separate_clocks = true});
  ASSERT_TRUE(importer.ok()) << importer.status();
  ASSERT_TRUE((*importer)
                  ->Import({{.path = RankTrace(0, 30, 0), .rank = 0},
                            {.path = RankTrace(1, 30, 250'000), .rank = 1}})
                  .ok());
  EXPECT_EQ((*importer)->stats().events, 2u * 30 * 4);
  EXPECT_EQ((*importer)->stats().collectives, 2u * 30);
  EXPECT_EQ((*importer)->stats().steps, 2u * 30);

  absl::StatusOr<std::unique_ptr<JobAnalyzer>> analyzer = AnalyzeStoredJob(dir_, "imported");
  ASSERT_TRUE(analyzer.ok()) << analyzer.status();
  v1::StepQuery all;
  std::vector<v1::StepReport> steps = (*analyzer)->Steps(all);
  ASSERT_GE(steps.size(), 25u);
  for (const v1::StepReport& s : steps) {
    EXPECT_EQ(s.devices_size(), 2) << "step " << s.step();
  }
  // Rank 1's clock was 250 ms ahead; its collectives put it on rank 0's.
  const v1::ClockReport clocks = (*analyzer)->Clocks();
  ASSERT_EQ(clocks.devices_size(), 2);
  const double offset_ms =
      static_cast<double>(clocks.devices(1).offset_ns() - clocks.devices(0).offset_ns()) / 1e6;
  EXPECT_NEAR(std::abs(offset_ms), 250, 1);
}

TEST_F(TraceImporterTest, AnImportNeverMixesIntoAnExistingJob) {
  ASSERT_TRUE(TraceImporter::Create({.data_dir = dir_, .job_id = "j", .fsync = false})
                  .value()
                  ->Import({{.path = RankTrace(0, 2, 0), .rank = 0}})
                  .ok());
  absl::StatusOr<std::unique_ptr<TraceImporter>> again =
      TraceImporter::Create({.data_dir = dir_, .job_id = "j", .fsync = false});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("new --job"));
}

TEST_F(TraceImporterTest, AFileWithoutARankIsNamedAndTheOthersAreKept) {
  const std::string good = RankTrace(0, 3, 0);
  const std::string anonymous = (dir_ / "trace.json").string();
  std::filesystem::copy_file(RankTrace(1, 3, 0), anonymous);
  auto importer = TraceImporter::Create({.data_dir = dir_, .job_id = "k", .fsync = false});
  const absl::Status s = (*importer)->Import({{.path = good, .rank = 0}, {.path = anonymous}});
  EXPECT_THAT(s.message(), HasSubstr(anonymous));
  EXPECT_THAT(s.message(), HasSubstr("no rank"));
  EXPECT_EQ((*importer)->stats().events, 3u * 4);
}

TEST_F(TraceImporterTest, DistributedInfoWinsOverANumberInTheFileName) {
  // Kineto names files host_pid.timestamp.pt.trace.json: not ranks.
  const std::string path = (dir_ / "host_4242.pt.trace.json").string();
  std::ofstream(path) << R"({"distributedInfo": {"rank": 1}, "traceEvents": [)"
                      << R"({"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2, "tid": 1}]})";
  auto importer = TraceImporter::Create({.data_dir = dir_, .job_id = "k", .fsync = false});
  ASSERT_TRUE((*importer)->Import({{.path = path, .name_rank = 4242}}).ok());
  absl::StatusOr<std::unique_ptr<JobAnalyzer>> analyzer = AnalyzeStoredJob(dir_, "k");
  ASSERT_TRUE(analyzer.ok()) << analyzer.status();
  ASSERT_EQ((*analyzer)->hosts().size(), 1u);
  EXPECT_EQ((*analyzer)->hosts().begin()->first, 1u);
}

TEST_F(TraceImporterTest, KernelsWithoutCorrelationLinkByFlowsAndCarryTheirOperatorsFlops) {
  // Two launches inside aten::mm (with_flops): the first kernel gets the
  // FLOPs. The kernels carry no args.correlation: ac2g flows link them. A
  // third kernel has neither and is kept with correlation 0. The file comes
  // out of time order (kernels first), as Kineto writes it.
  const std::string path = (dir_ / "flows.json").string();
  std::ofstream(path) << R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": 30,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm_tail", "pid": 0, "tid": 7, "ts": 160, "dur": 5,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 9, "ts": 170, "dur": 5,
     "args": {"device": 0, "stream": 9}},
    {"ph": "f", "id": 11, "pid": 0, "tid": 7, "ts": 120, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "f", "id": 12, "pid": 0, "tid": 7, "ts": 160, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "## fwd ##", "pid": 0, "tid": 7, "ts": 100,
     "dur": 90},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 42, "tid": 42, "ts": 100, "dur": 40,
     "args": {"flops": 5000}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 42,
     "ts": 105, "dur": 5},
    {"ph": "s", "id": 11, "pid": 42, "tid": 42, "ts": 105, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 42,
     "ts": 115, "dur": 5},
    {"ph": "s", "id": 12, "pid": 42, "tid": 42, "ts": 115, "cat": "ac2g", "name": "ac2g"}
  ], "distributedInfo": {"rank": 2, "world_size": 4}})";
  auto importer = TraceImporter::Create({.data_dir = dir_, .job_id = "f", .fsync = false});
  ASSERT_TRUE((*importer)->Import({{.path = path}}).ok());
  const TraceMappingStats& m = (*importer)->stats().mapping;
  EXPECT_EQ(m.kernels, 3u);
  EXPECT_EQ(m.gpu_linked, 2u);
  EXPECT_EQ(m.gpu_unlinked, 1u);
  EXPECT_EQ(m.gpu_annotations_skipped, 1u);
  EXPECT_EQ(m.runtime_calls, 2u);

  struct Gpu {
    std::string name;
    uint64_t value, correlation;
    int64_t delta;
    std::string op;
  };
  std::vector<Gpu> gpu;
  uint32_t rank = 99;
  absl::StatusOr<LogReader> reader = LogReader::Open(dir_ / "jobs" / "f");
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(reader
                  ->ForEach(
                      [&](const v1::LogRecord& r) {
                        if (r.has_stream_opened()) rank = r.stream_opened().hello().rank();
                        if (!r.has_batch()) return true;
                        const v1::EventBatch& b = r.batch().batch();
                        for (int i = 0, g = 0; i < b.kind_size(); ++i) {
                          if (b.kind(i) != v1::EVENT_KIND_GPU_KERNEL) continue;
                          gpu.push_back(
                              {b.strings(b.name(i)), b.value(i), b.gpu_correlation(g),
                               b.gpu_launch_delta_ns(g),
                               b.gpu_correlation(g) ? b.strings(b.gpu_launch_op(g)) : ""});
                          ++g;
                        }
                        return true;
                      },
                      nullptr)
                  .ok());
  EXPECT_EQ(rank, 2u) << "distributedInfo after the events";
  ASSERT_EQ(gpu.size(), 3u);
  EXPECT_EQ(gpu[0].name, "gemm");
  EXPECT_EQ(gpu[0].correlation, 11u);
  EXPECT_EQ(gpu[0].value, 5000u) << "the operator's FLOPs, on its first kernel";
  EXPECT_EQ(gpu[0].delta, -15'000);
  EXPECT_EQ(gpu[0].op, "aten::mm");
  EXPECT_EQ(gpu[1].correlation, 12u);
  EXPECT_EQ(gpu[1].value, 0u);
  EXPECT_EQ(gpu[1].op, "aten::mm");
  EXPECT_EQ(gpu[2].name, "orphan");
  EXPECT_EQ(gpu[2].correlation, 0u);
}

TEST_F(TraceImporterTest, ANamelessRecordParamCommsTakesItsKindFromTheNcclKernelItLaunched) {
  // No "Collective name", no c10d range inside: the kernel's name decides.
  // A second one launches an ordinary kernel: a "wait", an operator.
  const std::string path = (dir_ / "nameless.json").string();
  std::ofstream(path) << R"json({"distributedInfo": {"rank": 0}, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)",
     "pid": 0, "tid": 20, "ts": 300, "dur": 50, "args": {"device": 0, "stream": 20,
     "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "copy_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 6}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 100,
     "dur": 30, "args": {"Process Group Name": "7"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110,
     "dur": 5, "args": {"correlation": 5}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 200,
     "dur": 30},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 210,
     "dur": 5, "args": {"correlation": 6}}
  ]})json";
  auto importer = TraceImporter::Create({.data_dir = dir_, .job_id = "n", .fsync = false});
  ASSERT_TRUE((*importer)->Import({{.path = path}}).ok());
  const TraceMappingStats& m = (*importer)->stats().mapping;
  EXPECT_EQ(m.collectives, 1u);
  EXPECT_EQ(m.nccl_kernels, 1u);
  EXPECT_EQ(m.nccl_joined, 1u);
  EXPECT_EQ(m.operators, 1u) << "the wait";
  std::vector<std::tuple<int, uint32_t, std::string, uint64_t>> collectives;
  absl::StatusOr<LogReader> reader = LogReader::Open(dir_ / "jobs" / "n");
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(reader
                  ->ForEach(
                      [&](const v1::LogRecord& r) {
                        if (!r.has_batch()) return true;
                        const v1::EventBatch& b = r.batch().batch();
                        for (int i = 0, c = 0; i < b.kind_size(); ++i) {
                          if (!protocol::IsCollectiveKind(b.kind(i))) continue;
                          collectives.emplace_back(b.kind(i), b.detail(i), b.strings(b.group(c)),
                                                   b.group_sequence(c));
                          ++c;
                        }
                        return true;
                      },
                      nullptr)
                  .ok());
  ASSERT_EQ(collectives.size(), 2u);
  EXPECT_EQ(std::get<0>(collectives[0]), v1::EVENT_KIND_COLLECTIVE);
  EXPECT_EQ(std::get<0>(collectives[1]), v1::EVENT_KIND_GPU_COLLECTIVE);
  for (const auto& c : collectives) {
    EXPECT_EQ(std::get<1>(c), static_cast<uint32_t>(v1::COLLECTIVE_KIND_ALL_GATHER));
    EXPECT_EQ(std::get<2>(c), "7");
    EXPECT_EQ(std::get<3>(c), 1u);
  }
}

}  // namespace
}  // namespace trainscope::collector

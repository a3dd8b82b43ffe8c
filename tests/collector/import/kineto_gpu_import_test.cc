// Imports the real Kineto GPU traces of ../shared/data/kineto-gpu/ (see its
// README) and checks what the stored log holds against counts taken from the
// JSON text itself (a different method from the importer's parser).
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stored_log_census.h"
#include "trainscope/collector/import/trace_importer.h"
#include "trainscope/collector/ingest/batch_validator.h"
#include "trainscope/collector/offline/stored_job_analysis.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kData = KINETO_GPU_DATA;

std::string Gunzip(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::string text;
  if (f == nullptr) return text;
  char buffer[1 << 16];
  int got = 0;
  while ((got = gzread(f, buffer, sizeof(buffer))) > 0) text.append(buffer, got);
  gzclose(f);
  return text;
}

void WriteGz(const std::filesystem::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb1");
  ASSERT_NE(f, nullptr) << path;
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

uint64_t Count(const std::string& text, const std::string& needle) {
  uint64_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The ranks the files' distributedInfo give (README); the AMD trace has none
// and is the only file of its import: rank 0, not the 2 of "ROCm6_2".
const std::map<std::string, uint32_t> kRanks = {
    {"amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", 0},
    {"critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz", 0},
    {"nccl_parser_config__nccl_data.json.gz", 0},
    {"negative_queue_length_values_check__rank0.json.gz", 0},
    {"ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 0},
    {"trace_diff__control__control.json.gz", 3},
    {"trace_diff__test__test.json.gz", 1},
    {"trace_filter__sampled_rank-0.json.gz", 0},
    {"trace_filter__sampled_rank-1.json.gz", 1},
};

class KinetoGpuImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::is_directory(kData))
        << kData << " is missing: the real GPU traces these tests read";
    dir_ = std::filesystem::temp_directory_path() /
           ("trainscope-kineto-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Imports `files` as job `job`; the importer's stats.
  TraceImportStats Import(const std::string& job, const std::vector<std::string>& files,
                          bool separate_clocks = false, size_t max_events_in_memory = 1 << 20) {
    auto importer = TraceImporter::Create({.data_dir = dir_,
                                           .job_id = job,
                                           .fsync = false,
                                           .separate_clocks = separate_clocks,
                                           .max_events_in_memory = max_events_in_memory});
    EXPECT_TRUE(importer.ok()) << importer.status();
    if (!importer.ok()) return {};
    std::vector<TraceImporter::Source> sources;
    for (const std::string& f : files) sources.push_back({.path = f});
    const absl::Status s = (*importer)->Import(sources);
    EXPECT_TRUE(s.ok()) << s;
    return (*importer)->stats();
  }
  StoredLogCensus Census(const std::string& job) { return CountStoredLog(dir_ / "jobs" / job); }

  // Every original ProfilerStep# start (CPU annotations only) of a trace.
  static std::vector<int64_t> MarkStarts(const std::filesystem::path& path) {
    ChromeTraceReader reader(path.string());
    TraceEvent e;
    std::vector<int64_t> starts;
    absl::StatusOr<bool> got;
    while ((got = reader.Next(&e)).ok() && *got) {
      if (e.cat == "user_annotation" && absl::StartsWith(e.name, "ProfilerStep#")) {
        starts.push_back(e.ts_ns);
      }
    }
    EXPECT_TRUE(got.ok()) << got.status();
    std::sort(starts.begin(), starts.end());
    return starts;
  }

  // A copy of `name` whose step marks (and, if asked, optimizer ranges) are
  // gone: the marks become instants, which an import skips.
  std::filesystem::path Stripped(const std::string& name, bool strip_optimizer) {
    std::string text = Gunzip(kData / name);
    const std::string mark = R"("ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)";
    const uint64_t marks = Count(text, mark);
    EXPECT_EQ(marks, MarkStarts(kData / name).size()) << name << ": every mark is stripped";
    absl::StrReplaceAll({{mark, R"("ph": "i", "cat": "user_annotation", "name": "ProfilerStep#)"}},
                        &text);
    if (strip_optimizer) {
      absl::StrReplaceAll({{R"("name": "Optimizer.step#)", R"("name": "Optimizer.stepped#)"}},
                          &text);
    }
    const std::filesystem::path out = dir_ / ("stripped-" + name);
    WriteGz(out, text);
    return out;
  }

  // Every original mark after the first has a found step start within
  // `tolerance` of the median step; no more than one step more is found.
  static void ExpectStepsLineUp(const std::vector<int64_t>& original,
                                const std::vector<int64_t>& found, const std::string& what) {
    ASSERT_GE(original.size(), 2u) << what;
    std::vector<int64_t> lengths;
    for (size_t i = 1; i < original.size(); ++i) lengths.push_back(original[i] - original[i - 1]);
    std::sort(lengths.begin(), lengths.end());
    const int64_t tolerance = lengths[lengths.size() / 2] / 50;  // 2 % of a step
    EXPECT_LE(found.size(), original.size() + 1) << what;
    for (size_t i = 1; i < original.size(); ++i) {
      int64_t nearest = INT64_MAX;
      for (int64_t f : found) nearest = std::min(nearest, std::abs(f - original[i]));
      EXPECT_LE(nearest, tolerance) << what << ": mark " << i << " at " << original[i]
                                    << " ns has no found step start near it";
    }
  }

  std::filesystem::path dir_;
};

TEST_F(KinetoGpuImportTest, EveryTraceImportsEveryKernelOnAGpuStreamAndEachCollectiveOnce) {
  size_t traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kData)) {
    const std::string name = entry.path().filename().string();
    if (!absl::EndsWith(name, ".json.gz")) continue;
    ++traces;
    SCOPED_TRACE(name);
    const std::string job = absl::StrCat("t", traces);
    const TraceImportStats stats = Import(job, {entry.path().string()});
    const StoredLogCensus census = Census(job);
    const std::string text = Gunzip(entry.path());

    // Kernels: none dropped, NCCL kernels never classed as compute.
    const uint64_t kernels = Count(text, R"("cat": "kernel")");
    const uint64_t nccl = Count(text, R"("name": "nccl)") - Count(text, R"("name": "nccl:)");
    ASSERT_GT(kernels, 0u);
    EXPECT_EQ(census.kinds.at(v1::EVENT_KIND_GPU_KERNEL) +
                  (census.kinds.count(v1::EVENT_KIND_GPU_COLLECTIVE)
                       ? census.kinds.at(v1::EVENT_KIND_GPU_COLLECTIVE)
                       : 0),
              kernels);
    EXPECT_EQ(census.kinds.count(v1::EVENT_KIND_GPU_COLLECTIVE)
                  ? census.kinds.at(v1::EVENT_KIND_GPU_COLLECTIVE)
                  : 0,
              nccl);
    EXPECT_EQ(stats.mapping.nccl_kernels, nccl);
    EXPECT_EQ(stats.mapping.kernels, kernels - nccl);
    auto kind_count = [&](v1::EventKind k) {
      return census.kinds.count(k) ? census.kinds.at(k) : uint64_t{0};
    };
    EXPECT_EQ(kind_count(v1::EVENT_KIND_GPU_MEMCPY), Count(text, R"("cat": "gpu_memcpy")"));
    EXPECT_EQ(kind_count(v1::EVENT_KIND_GPU_MEMSET), Count(text, R"("cat": "gpu_memset")"));
    EXPECT_EQ(kind_count(v1::EVENT_KIND_GPU_RUNTIME),
              Count(text, R"("cat": "cuda_runtime")") + Count(text, R"("cat": "cuda_driver")"));
    // One CPU collective per c10d collective: never its record_param_comms
    // and its "nccl:<op>" range both.
    EXPECT_EQ(kind_count(v1::EVENT_KIND_COLLECTIVE),
              Count(text, R"("cat": "user_annotation", "name": "nccl:)"));
    // Launches linked: most device work knows its launch; none starts before it.
    EXPECT_EQ(census.gpu_events, stats.mapping.gpu_linked + stats.mapping.gpu_unlinked);
    EXPECT_GE(static_cast<double>(census.gpu_linked), 0.85 * census.gpu_events);
    EXPECT_EQ(census.gpu_linked, stats.mapping.gpu_linked);
    EXPECT_EQ(census.launch_after_start, 0u);
    EXPECT_EQ(census.bad_batches, 0u);
    // Ranks from distributedInfo, never from digits in the name.
    ASSERT_EQ(census.hellos.size(), 1u);
    EXPECT_EQ(census.hellos[0].rank(), kRanks.at(name));
    ASSERT_EQ(census.hellos[0].clock_domains_size(), 1);
    EXPECT_FALSE(census.hellos[0].clock_domains(0).domain_id().empty());
    // NCCL kernels joined to their CPU collective share its group and sequence.
    for (const auto& [rank, gpu] : census.gpu_collectives) {
      const auto& cpu = census.cpu_collectives.count(rank)
                            ? census.cpu_collectives.at(rank)
                            : decltype(census.cpu_collectives)::mapped_type();
      const std::set<std::pair<std::string, uint64_t>> host(cpu.begin(), cpu.end());
      uint64_t shared = 0;
      for (const auto& c : gpu) shared += host.count(c);
      EXPECT_GE(shared, stats.mapping.nccl_joined);
    }
  }
  EXPECT_EQ(traces, kRanks.size());
}

TEST_F(KinetoGpuImportTest, NcclKernelsJoinTheirRecordParamCommsOnCorrelation) {
  // trace_filter's record_param_comms carry no collective name: the kind
  // comes from the c10d range inside, the join from the launch's correlation.
  for (const std::string name :
       {"trace_filter__sampled_rank-0.json.gz", "nccl_parser_config__nccl_data.json.gz",
        "trace_diff__control__control.json.gz"}) {
    SCOPED_TRACE(name);
    const TraceImportStats stats = Import("j", {(kData / name).string()});
    EXPECT_GT(stats.mapping.nccl_kernels, 0u);
    EXPECT_EQ(stats.mapping.nccl_joined, stats.mapping.nccl_kernels);
    const StoredLogCensus census = Census("j");
    for (const auto& [rank, gpu] : census.gpu_collectives) {
      const auto& cpu = census.cpu_collectives.count(rank)
                            ? census.cpu_collectives.at(rank)
                            : decltype(census.cpu_collectives)::mapped_type();
      for (const auto& c : gpu) {
        EXPECT_NE(std::find(cpu.begin(), cpu.end(), c), cpu.end())
            << c.first << "#" << c.second << " has no CPU collective";
      }
    }
    std::filesystem::remove_all(dir_ / "jobs");
  }
}

TEST_F(KinetoGpuImportTest, HelloCarriesTheGpusTheHostAndOneClockPerHost) {
  Import("ns",
         {(kData / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz").string()});
  const StoredLogCensus ns = Census("ns");
  ASSERT_EQ(ns.hellos.size(), 1u);
  EXPECT_EQ(ns.hellos[0].host(), "twshared39868.02.pnb3.facebook.com");
  EXPECT_EQ(ns.hellos[0].clock_domains(0).domain_id(), "host:twshared39868.02.pnb3.facebook.com");
  ASSERT_GE(ns.hellos[0].gpus_size(), 1);
  EXPECT_EQ(ns.hellos[0].gpus(0).name(), "Tesla V100-SXM2-32GB");
  EXPECT_EQ(ns.hellos[0].gpus(0).compute_capability(), "7.0");
  EXPECT_GT(ns.hellos[0].gpus(0).memory_bytes(), 30'000'000'000u);

  // No host name: one import is one clock, unless the files came from
  // several hosts.
  const std::vector<std::string> pair = {(kData / "trace_filter__sampled_rank-0.json.gz").string(),
                                         (kData / "trace_filter__sampled_rank-1.json.gz").string()};
  Import("pair", pair);
  const StoredLogCensus one = Census("pair");
  ASSERT_EQ(one.hellos.size(), 2u);
  EXPECT_EQ(one.hellos[0].clock_domains(0).domain_id(), "import:pair");
  EXPECT_EQ(one.hellos[1].clock_domains(0).domain_id(), "import:pair");
  EXPECT_EQ(std::set<uint32_t>({one.hellos[0].rank(), one.hellos[1].rank()}),
            std::set<uint32_t>({0, 1}));
  Import("apart", pair, /*separate_clocks=*/true);
  const StoredLogCensus apart = Census("apart");
  ASSERT_EQ(apart.hellos.size(), 2u);
  EXPECT_NE(apart.hellos[0].clock_domains(0).domain_id(),
            apart.hellos[1].clock_domains(0).domain_id());

  Import("diff", {(kData / "trace_diff__control__control.json.gz").string()});
  const StoredLogCensus diff = Census("diff");
  ASSERT_EQ(diff.hellos.size(), 1u);
  EXPECT_EQ(diff.hellos[0].device(), "cuda:3") << "rank 3's kernels ran on GPU 3";
  EXPECT_EQ(diff.hellos[0].gpus_size(), 8) << "deviceProperties lists the host's GPUs";

  Import("amd", {(kData / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz").string()});
  const StoredLogCensus amd = Census("amd");
  ASSERT_EQ(amd.hellos.size(), 1u);
  ASSERT_GE(amd.hellos[0].gpus_size(), 1);
  EXPECT_EQ(amd.hellos[0].gpus(0).vendor(), "amd");
}

TEST_F(KinetoGpuImportTest, SpillingToSortGivesTheSameLog) {
  const std::string trace = (kData / "trace_filter__sampled_rank-0.json.gz").string();
  const TraceImportStats in_memory = Import("mem", {trace});
  // ~5 k events in runs of 1000, merged back from temporary files.
  const TraceImportStats small = Import("small", {trace}, false, 1000);
  ASSERT_EQ(small.files.size(), 1u);
  EXPECT_GE(small.files[0].sort_runs_spilled, 4u);
  const StoredLogCensus a = Census("mem");
  const StoredLogCensus b = Census("small");
  EXPECT_EQ(a.kinds, b.kinds);
  EXPECT_EQ(a.step_marks_ns, b.step_marks_ns);
  EXPECT_EQ(in_memory.mapping.gpu_linked, small.mapping.gpu_linked);
}

TEST_F(KinetoGpuImportTest, WithoutMarksStepsComeFromOptimizerRanges) {
  for (const std::string name :
       {"nccl_parser_config__nccl_data.json.gz",
        "negative_queue_length_values_check__rank0.json.gz",
        "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "trace_diff__control__control.json.gz", "trace_diff__test__test.json.gz",
        "trace_filter__sampled_rank-0.json.gz"}) {
    SCOPED_TRACE(name);
    const std::string job = absl::StrCat("o", name.size());
    const TraceImportStats stats = Import(job, {Stripped(name, false).string()});
    ASSERT_EQ(stats.files.size(), 1u);
    EXPECT_FALSE(stats.files[0].has_step_marks);
    EXPECT_EQ(stats.files[0].step_source, StepFinder::Source::kOptimizerStep)
        << stats.files[0].step_description;
    ExpectStepsLineUp(MarkStarts(kData / name), Census(job).step_marks_ns, name);
    std::filesystem::remove_all(dir_ / "jobs");
  }
}

TEST_F(KinetoGpuImportTest, WithoutMarksOrOptimizerStepsComeFromTheRepeatingPattern) {
  for (const std::string name :
       {"nccl_parser_config__nccl_data.json.gz",
        "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "trace_diff__control__control.json.gz", "trace_diff__test__test.json.gz",
        "negative_queue_length_values_check__rank0.json.gz"}) {
    SCOPED_TRACE(name);
    const std::string job = absl::StrCat("p", name.size());
    const TraceImportStats stats = Import(job, {Stripped(name, true).string()});
    ASSERT_EQ(stats.files.size(), 1u);
    EXPECT_EQ(stats.files[0].step_source, StepFinder::Source::kRepeatingPattern)
        << stats.files[0].step_description;
    ExpectStepsLineUp(MarkStarts(kData / name), Census(job).step_marks_ns, name);
    std::filesystem::remove_all(dir_ / "jobs");
  }
}

TEST_F(KinetoGpuImportTest, AlexNetGetsAClearStatementOfWhyNoSteps) {
  const TraceImportStats stats =
      Import("alexnet",
             {(kData / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz")
                  .string()});
  ASSERT_EQ(stats.files.size(), 1u);
  EXPECT_EQ(stats.files[0].step_source, StepFinder::Source::kNone);
  EXPECT_THAT(stats.files[0].step_description, HasSubstr("no steps"));
  EXPECT_THAT(stats.files[0].step_description, HasSubstr("no ProfilerStep# marks"));
  EXPECT_THAT(stats.files[0].step_description, HasSubstr("Optimizer.step#"));
  EXPECT_EQ(stats.steps, 0u);
  EXPECT_TRUE(Census("alexnet").step_marks_ns.empty());
}

TEST_F(KinetoGpuImportTest, ImportedBatchesPassTheCollectorsValidatorAsALiveAgentsWould) {
  // An imported log can be replayed to a collector (trainscope replay): its
  // batches must pass what a live agent's pass, per-thread and per-stream
  // completion times never going backwards included.
  for (const auto& [name, rank] : kRanks) {
    SCOPED_TRACE(name);
    Import("v", {(kData / name).string()});
    absl::StatusOr<LogReader> reader = LogReader::Open(dir_ / "jobs" / "v");
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::map<uint32_t, std::unique_ptr<BatchValidator>> validators;
    uint64_t batches = 0;
    std::string first_error;
    ASSERT_TRUE(reader
                    ->ForEach(
                        [&](const v1::LogRecord& r) {
                          if (r.has_stream_opened()) {
                            const v1::Hello& h = r.stream_opened().hello();
                            validators[h.rank()] = std::make_unique<BatchValidator>(h.world_size());
                          }
                          if (!r.has_batch()) return true;
                          ++batches;
                          const absl::Status s =
                              validators.at(r.batch().rank())->Validate(r.batch().batch());
                          if (!s.ok() && first_error.empty())
                            first_error = std::string(s.message());
                          return true;
                        },
                        nullptr)
                    .ok());
    EXPECT_GT(batches, 0u);
    EXPECT_EQ(first_error, "");
    std::filesystem::remove_all(dir_ / "jobs");
  }
}

TEST_F(KinetoGpuImportTest, TheAnalysisReadsAnImportedGpuTrace) {
  Import("diff", {(kData / "trace_diff__control__control.json.gz").string()});
  absl::StatusOr<std::unique_ptr<JobAnalyzer>> analyzer = AnalyzeStoredJob(dir_, "diff");
  ASSERT_TRUE(analyzer.ok()) << analyzer.status();
  const std::vector<v1::StepReport> steps = (*analyzer)->Steps(v1::StepQuery());
  // ProfilerStep#1009..1014 (and the operators before the first mark).
  EXPECT_GE(steps.size(), 6u);
  for (const v1::StepReport& s : steps) EXPECT_EQ(s.devices_size(), 1);
}

}  // namespace
}  // namespace trainscope::collector

// Resident memory of one job's analysis under a flood of distinct operator
// names (issue 21.2): N names through JobAnalyzer, RSS before, after the
// flood and after Release() (what a finished job keeps). Each mode runs in a
// forked child so that one mode's heap does not hide another's.
//
//   build/bin/analysis_memory_bench [names=5000000] [names_per_batch=1000]
//
// Modes: "unbounded" (max_names 0: the behaviour before the budget) and
// "default budget" (JobAnalyzerOptions defaults). Prints one line per mode.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "testing/event_batch_builder.h"
#include "trainscope/collector/analysis/job_analyzer.h"

namespace trainscope::collector {
namespace {

double RssMiB() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = -1;
  std::fclose(f);
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1 << 20);
}

void RunMode(const char* label, JobAnalyzerOptions options, long names, long per_batch) {
  const double rss_start = RssMiB();
  JobAnalyzer analyzer(options, {});
  trainscope::v1::Hello hello;
  hello.set_job_id("bench");
  hello.set_rank(0);
  hello.set_world_size(1);
  analyzer.OnStreamOpened(hello, 0);
  constexpr int64_t kMs = 1'000'000;
  long next = 0;
  uint64_t step = 0;
  while (next < names) {
    const int64_t t0 = 1'000 * kMs + static_cast<int64_t>(step) * 10 * kMs;
    testing::EventBatchBuilder b(step + 1);
    for (long i = 0; i < per_batch && next < names; ++i, ++next) {
      // A generated name, as a JIT or a per-request label would make one.
      b.Operator(absl::StrCat("aten::generated_kernel_", next, "_fused"), t0 + i * 1'000,
                 t0 + i * 1'000 + 500);
    }
    b.StepMark(t0 + 10 * kMs, step + 1);
    analyzer.OnBatch(0, b.Build(), 0);
    ++step;
  }
  analyzer.Finish();
  const double rss_full = RssMiB();
  const JobAnalyzerStats stats = analyzer.stats();
  analyzer.Release();
  malloc_trim(0);  // as AnalysisWorker::Release does
  const double rss_released = RssMiB();
  std::printf(
      "%-15s names=%ld interned=%llu over_budget=%llu operators_held=%llu "
      "rss_start=%.0fMiB rss_after_flood=%.0fMiB rss_after_release=%.0fMiB\n",
      label, names, static_cast<unsigned long long>(stats.names),
      static_cast<unsigned long long>(stats.names_over_budget),
      static_cast<unsigned long long>(stats.operators_held), rss_start, rss_full, rss_released);
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  const long names = argc > 1 ? std::atol(argv[1]) : 5'000'000;
  const long per_batch = argc > 2 ? std::atol(argv[2]) : 1'000;
  JobAnalyzerOptions unbounded;
  unbounded.strings.max_names = 0;
  unbounded.strings.max_bytes = 0;
  JobAnalyzerOptions budget;  // the defaults
  struct Mode {
    const char* label;
    JobAnalyzerOptions options;
  };
  for (const Mode& mode : {Mode{"unbounded", unbounded}, Mode{"default_budget", budget}}) {
    const pid_t child = fork();
    if (child == 0) {
      RunMode(mode.label, mode.options, names, per_batch);
      std::_Exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "analysis_memory_bench: mode %s failed\n", mode.label);
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace trainscope::collector

int main(int argc, char** argv) { return trainscope::collector::Main(argc, argv); }

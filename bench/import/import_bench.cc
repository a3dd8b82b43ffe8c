// The importer alone, without the CLI's rules pass: imports trace files into
// a fresh job under a temporary data dir and prints the seconds, MB/s of
// uncompressed JSON, events/s and the process's peak RSS.
//
//   build/bin/import_bench [--max-events-in-memory N] FILE...
//
// bench/import/kineto_gpu_import.py runs it on generated Kineto GPU traces.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "trainscope/collector/import/trace_importer.h"

int main(int argc, char** argv) {
  using trainscope::collector::TraceImporter;
  trainscope::collector::TraceImportOptions options;
  std::vector<TraceImporter::Source> sources;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--max-events-in-memory" && i + 1 < argc) {
      options.max_events_in_memory = std::strtoull(argv[++i], nullptr, 10);
    } else {
      sources.push_back({.path = arg});
    }
  }
  if (sources.empty()) {
    std::fprintf(stderr, "usage: import_bench [--max-events-in-memory N] FILE...\n");
    return 2;
  }
  options.data_dir = std::filesystem::temp_directory_path() /
                     ("trainscope-import-bench-" + std::to_string(::getpid()));
  options.job_id = "bench";
  options.fsync = false;
  std::filesystem::remove_all(options.data_dir);
  const auto start = std::chrono::steady_clock::now();
  auto importer = TraceImporter::Create(options);
  if (!importer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(importer.status().message()).c_str());
    return 1;
  }
  const absl::Status s = (*importer)->Import(sources);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove_all(options.data_dir);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto& stats = (*importer)->stats();
  std::printf(
      "import_bench: %.1f MB, %llu events in %.2f s: %.1f MB/s, %.0f events/s, "
      "peak RSS %.0f MB, %zu sort runs spilled\n",
      static_cast<double>(stats.bytes) / 1e6, static_cast<unsigned long long>(stats.events),
      seconds, static_cast<double>(stats.bytes) / 1e6 / seconds,
      static_cast<double>(stats.events) / seconds, static_cast<double>(usage.ru_maxrss) / 1024.0,
      stats.files.empty() ? size_t{0} : stats.files[0].sort_runs_spilled);
  return 0;
}

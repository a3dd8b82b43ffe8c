// Cost of ClockAligner on the analysis thread, per event through Add.
//
//   BM_AddDataParallel/<ranks>: a data-parallel job (one AllReduce per 50
//     operators on every rank, probes every 100 ms), ranks' batches
//     interleaved; items_per_second counts every event and probe.
//   BM_AddPipeline: the 2x2 pipeline job (sends/receives and two DP groups).
//   BM_AddGpuCollectives/<ranks>: the data-parallel job as a GPU job records
//     it: every collective a CPU launch record plus an NCCL kernel, the
//     kernels aligning the ranks (each rank its own clock: every one fitted,
//     on the 4x longer window of kernel ends).
// "sample" counts one rank's end in one collective instance (CPU record or
// NCCL kernel): ns/sample is the time per sample, everything included.
//   BM_AddOperatorOnly: an operator event alone (the common case).
//   BM_ToReference: one timestamp mapped (called for every aligned operator).
#include <utility>
#include <vector>

#include "analysis/synthetic_clock_job.h"
#include "benchmark/benchmark.h"
#include "trainscope/collector/analysis/clock_aligner.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {
namespace {

using Item = SyntheticClockJob::Item;

// Rank by rank per iteration, as batches would arrive.
std::vector<std::pair<uint32_t, Item>> Flatten(const SyntheticClockJob& job) {
  std::vector<std::pair<uint32_t, Item>> out;
  std::vector<size_t> cursor(job.streams().size(), 0);
  for (int k = 0; k < job.config().iterations; ++k) {
    for (uint32_t r = 0; r < job.streams().size(); ++r) {
      const auto& stream = job.streams()[r];
      while (cursor[r] < stream.size() && stream[cursor[r]].iteration <= k) {
        out.emplace_back(r, stream[cursor[r]++]);
      }
    }
  }
  return out;
}

void Feed(benchmark::State& state, SyntheticClockJob::Config config, uint32_t world) {
  JobStrings strings;
  SyntheticClockJob job(config, &strings);
  const auto items = Flatten(job);
  int64_t samples = 0;
  for (const auto& [rank, item] : items) samples += !item.probe && item.event.IsCollective();
  for (auto _ : state) {
    state.PauseTiming();
    GroupDirectory groups(&strings);
    groups.set_world_size(world);
    ClockAligner aligner(&groups);
    if (!config.host.empty()) job.DeclareDomains(&aligner);
    state.ResumeTiming();
    for (const auto& [rank, item] : items) {
      if (item.probe) {
        aligner.AddProbe(rank, item.probe_send_unix, item.agent_receive, item.agent_send,
                         item.probe_receive_unix);
      } else {
        aligner.Add(rank, item.event);
      }
    }
    benchmark::DoNotOptimize(aligner.ToReference(world - 1, 0));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(items.size()));
  state.counters["ns/sample"] = benchmark::Counter(
      static_cast<double>(samples) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_AddDataParallel(benchmark::State& state) {
  SyntheticClockJob::Config config;
  config.world_size = static_cast<uint32_t>(state.range(0));
  config.iterations = 200;
  config.probe_period_ns = 100'000'000;
  Feed(state, config, config.world_size);
}
BENCHMARK(BM_AddDataParallel)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_AddGpuCollectives(benchmark::State& state) {
  SyntheticClockJob::Config config;
  config.world_size = static_cast<uint32_t>(state.range(0));
  config.iterations = 200;
  config.gpu_collectives = true;
  Feed(state, config, config.world_size);
}
BENCHMARK(BM_AddGpuCollectives)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_AddPipeline(benchmark::State& state) {
  SyntheticClockJob::Config config;
  config.layout = SyntheticClockJob::Layout::kPipeline;
  config.iterations = 400;
  config.probe_period_ns = 100'000'000;
  Feed(state, config, 4);
}
BENCHMARK(BM_AddPipeline)->Unit(benchmark::kMillisecond);

void BM_AddOperatorOnly(benchmark::State& state) {
  JobStrings strings;
  GroupDirectory groups(&strings);
  ClockAligner aligner(&groups);
  DeviceEvent op;
  op.kind = v1::EVENT_KIND_OPERATOR;
  for (auto _ : state) {
    op.end_ns += 1000;
    aligner.Add(3, op);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AddOperatorOnly);

void BM_ToReference(benchmark::State& state) {
  JobStrings strings;
  SyntheticClockJob::Config config;
  config.world_size = 8;
  config.iterations = 20;
  SyntheticClockJob job(config, &strings);
  GroupDirectory groups(&strings);
  groups.set_world_size(8);
  ClockAligner aligner(&groups);
  job.FeedThrough(config.iterations - 1, &aligner);
  int64_t t = job.Local(5, job.EvalTimes(10)[0]);
  for (auto _ : state) {
    benchmark::DoNotOptimize(aligner.ToReference(5, t));
    t += 997;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ToReference);

}  // namespace
}  // namespace trainscope::collector

BENCHMARK_MAIN();

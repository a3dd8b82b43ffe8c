// Events per second through step assembly: StepAssembler::Add for every
// event, the step closes (alignment, per-device/link/stage metrics) and the
// closed step's operators go into an OperatorStore. The collector's budget:
// analysis on vs off costs <= 20 % of end-to-end ingest (~2 M events/s), so
// this path should sustain well over 10 M events/s.
//
// A synthetic data-parallel job: `ranks` devices; per step and device
// `ops` operators (pairs of nested operators, a "flops" counter after each
// inner one), 4 all-reduces of the world group, phase marks and a step mark.
// Events of different ranks arrive interleaved in batches of 256.
// The GPU workload (BM_StepAssembly<_, true>) adds per compute operator pair
// its runtime launch call and the kernel it launched (on one of two compute
// streams), per all-reduce its NCCL kernel (same group and sequence) on an
// NCCL stream, and per 16 operators an H2D copy: about as many GPU events as
// CPU ones, arriving after the host's events of their step (as CUPTI buffers
// do), each attributed to its step by its launch time. ns/event of the two
// workloads in one run compare the GPU path against the CPU-only baseline.
// BM_StepAssembly<_, _, true> derives each step's per-pair traffic
// (TrafficModel, as JobAnalyzer does): against the same workload without it
// in the same run, the traffic's cost (goal: >= 0.9x the throughput).
//
//   build-*/bin/step_assembly_bench --benchmark_counters_tabular=true
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "trainscope/collector/analysis/clock_aligner.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/operator_store.h"
#include "trainscope/collector/analysis/step_assembler.h"
#include "trainscope/collector/analysis/traffic_model.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

// An offset and a drift per rank, like ClockAligner's estimates.
class DriftClock : public ReferenceClock {
 public:
  int64_t ToReference(uint32_t rank, int64_t local_ns) const override {
    const int64_t offset = static_cast<int64_t>(rank) * 1'000'003;
    const double drift_ppm = 3.5 + rank;
    return local_ns + offset +
           static_cast<int64_t>(drift_ppm * 1e-6 * static_cast<double>(local_ns));
  }
};

struct Job {
  JobStrings strings;
  GroupDirectory groups{&strings};
  // One step of one rank, times relative to the step's start.
  std::vector<std::vector<DeviceEvent>> step_events;
  int64_t step_ns = 0;
};

std::unique_ptr<Job> MakeJob(uint32_t ranks, uint32_t ops, bool gpu = false) {
  auto job = std::make_unique<Job>();
  job->groups.set_world_size(ranks);
  const uint32_t linear = job->strings.Intern("aten::linear");
  const uint32_t addmm = job->strings.Intern("aten::addmm");
  const uint32_t flops = job->strings.Intern("flops");
  const uint32_t allreduce = job->strings.Intern("nccl:all_reduce");
  const uint32_t world = job->strings.Intern("default_pg");
  const uint32_t gemm = job->strings.Intern("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n");
  const uint32_t nccl = job->strings.Intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  const uint32_t memcpy = job->strings.Intern("Memcpy HtoD (Pageable -> Device)");
  const uint32_t launch = job->strings.Intern("cudaLaunchKernel");
  constexpr int64_t kOpNs = 2'000;
  job->step_ns = static_cast<int64_t>(ops / 2 + 8) * kOpNs + 100'000;
  job->step_events.resize(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    std::vector<DeviceEvent>& ev = job->step_events[r];
    auto add = [&](v1::EventKind kind, uint32_t name, int64_t start, int64_t end, uint64_t value,
                   uint32_t detail) {
      DeviceEvent e;
      e.kind = kind;
      e.name = name;
      e.start_ns = start;
      e.end_ns = end;
      e.value = value;
      e.detail = detail;
      e.thread = 7;
      ev.push_back(e);
      return &ev.back();
    };
    // The step's GPU work, appended after its host events.
    std::vector<DeviceEvent> device;
    uint64_t correlation = 0;
    auto gpu_work = [&](v1::EventKind kind, uint32_t name, uint32_t stream, int64_t launched,
                        int64_t start, int64_t end, uint32_t detail) {
      DeviceEvent e;
      e.kind = kind;
      e.name = name;
      e.gpu_stream = stream;
      e.correlation = ++correlation;  // made unique per step below
      e.launch_ns = launched;
      e.launch_op = addmm;
      e.start_ns = start;
      e.end_ns = end;
      e.detail = detail;
      device.push_back(e);
      return &device.back();
    };
    int64_t t = 10'000 + r * 50;
    int64_t stream_free = t;  // the compute streams run behind the host
    for (uint32_t i = 0; i < ops / 2; ++i) {
      const uint32_t scope = i < ops / 4 ? v1::OPERATOR_SCOPE_FORWARD : v1::OPERATOR_SCOPE_BACKWARD;
      add(v1::EVENT_KIND_OPERATOR, addmm, t + 100, t + 1500, i, scope);
      add(v1::EVENT_KIND_COUNTER, flops, t + 1500, t + 1500, 1'000'000, 0);
      add(v1::EVENT_KIND_OPERATOR, linear, t, t + 1600, i, scope);
      if (gpu) {
        add(v1::EVENT_KIND_GPU_RUNTIME, launch, t + 200, t + 210, 0, v1::RUNTIME_CALL_LAUNCH);
        stream_free = std::max(stream_free, t + 400) + 1'200;
        gpu_work(v1::EVENT_KIND_GPU_KERNEL, gemm, 7 + i % 2, t + 200, stream_free - 1'200,
                 stream_free, 0);
        if (i % 16 == 0) {
          gpu_work(v1::EVENT_KIND_GPU_MEMCPY, memcpy, 9, t + 220, t + 300, t + 900,
                   v1::COPY_KIND_HOST_TO_DEVICE);
        }
      }
      t += kOpNs;
      if (i % (ops / 8 + 1) == ops / 8) {
        DeviceEvent* c = add(v1::EVENT_KIND_COLLECTIVE, allreduce, t, t + 5'000 + r * 100, 1 << 20,
                             v1::COLLECTIVE_KIND_ALL_REDUCE);
        c->group = world;
        c->group_sequence = i;  // made unique per step below
        if (gpu) {
          DeviceEvent* k = gpu_work(v1::EVENT_KIND_GPU_COLLECTIVE, nccl, 20, t + 10,
                                    t + 1'000 + r * 100, t + 5'500, v1::COLLECTIVE_KIND_ALL_REDUCE);
          k->group = world;
          k->group_sequence = i;
        }
        t += 6'000;
      }
    }
    add(v1::EVENT_KIND_PHASE_MARK, 0, 10'000, t, 0, v1::PHASE_FORWARD);
    ev.insert(ev.end(), device.begin(), device.end());
  }
  return job;
}

// Clock: DriftClock (offset + drift per rank), or with `with_aligner` the
// real ClockAligner fed the collectives as JobAnalyzer does (its Add cost
// included).
template <bool with_aligner, bool gpu = false, bool traffic = false>
void BM_StepAssembly(benchmark::State& state) {
  const uint32_t ranks = static_cast<uint32_t>(state.range(0));
  const uint32_t ops = static_cast<uint32_t>(state.range(1));
  std::unique_ptr<Job> job = MakeJob(ranks, ops, gpu);
  DriftClock drift;
  ClockAligner aligner(&job->groups);
  const ReferenceClock& clock = with_aligner ? static_cast<const ReferenceClock&>(aligner) : drift;
  OperatorStore store({.max_operators = 2'000'000});
  uint64_t closed = 0;
  uint64_t pairs = 0;
  TrafficModel model;
  StepAssembler assembler(&job->strings, &job->groups, &clock,
                          {.traffic_model = traffic ? &model : nullptr}, [&](ClosedStep&& step) {
                            ++closed;
                            pairs += static_cast<uint64_t>(step.report.traffic_size());
                            store.Insert(std::move(step.operators));
                          });
  for (uint32_t r = 0; r < ranks; ++r) assembler.OnDeviceOpened(r);

  constexpr size_t kBatch = 256;
  uint64_t step = 1;
  uint64_t events = 0;
  std::vector<size_t> next(ranks);
  for (auto _ : state) {
    const int64_t base = static_cast<int64_t>(step) * job->step_ns;
    for (uint32_t r = 0; r < ranks; ++r) {
      DeviceEvent mark;
      mark.kind = v1::EVENT_KIND_STEP_MARK;
      mark.start_ns = mark.end_ns = base;
      mark.value = step;
      assembler.Add(r, mark);
      next[r] = 0;
    }
    // Round-robin batches across ranks, as durable batches arrive.
    bool more = true;
    while (more) {
      more = false;
      for (uint32_t r = 0; r < ranks; ++r) {
        const std::vector<DeviceEvent>& ev = job->step_events[r];
        const size_t end = std::min(ev.size(), next[r] + kBatch);
        for (size_t i = next[r]; i < end; ++i) {
          DeviceEvent e = ev[i];
          e.start_ns += base;
          e.end_ns += base;
          if (e.IsCollective()) e.group_sequence += step * ops;
          if (e.kind == v1::EVENT_KIND_PHASE_MARK) e.value = step;
          if (e.IsGpu()) {
            e.launch_ns += base;
            e.correlation += step * 4 * ops;
          }
          if (with_aligner && e.IsCollective()) aligner.Add(r, e);
          assembler.Add(r, e);
        }
        events += end - next[r];
        next[r] = end;
        more |= end < ev.size();
      }
    }
    events += ranks;  // the marks
    ++step;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["steps_closed"] = static_cast<double>(closed);
  state.counters["pairs_per_step"] = closed > 0 ? static_cast<double>(pairs) / closed : 0.0;
  state.counters["ops_held"] = static_cast<double>(store.stats().operators);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_TEMPLATE(BM_StepAssembly, false)
    ->ArgNames({"ranks", "ops"})
    ->Args({8, 1'000})
    ->Args({8, 10'000})
    ->Args({64, 1'000})
    ->Args({256, 200})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_StepAssembly, true)
    ->ArgNames({"ranks", "ops"})
    ->Args({8, 10'000})
    ->Args({64, 1'000})
    ->Unit(benchmark::kMillisecond);
// The GPU workload beside the CPU-only one above (same ranks and operators).
BENCHMARK_TEMPLATE(BM_StepAssembly, false, true)
    ->ArgNames({"ranks", "ops"})
    ->Args({8, 1'000})
    ->Args({8, 10'000})
    ->Args({64, 1'000})
    ->Unit(benchmark::kMillisecond);

// With per-pair traffic, beside the same workloads without it above.
BENCHMARK_TEMPLATE(BM_StepAssembly, false, false, true)
    ->ArgNames({"ranks", "ops"})
    ->Args({8, 1'000})
    ->Args({8, 10'000})
    ->Args({64, 1'000})
    ->Args({256, 200})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_StepAssembly, false, true, true)
    ->ArgNames({"ranks", "ops"})
    ->Args({8, 1'000})
    ->Args({8, 10'000})
    ->Args({64, 1'000})
    ->Unit(benchmark::kMillisecond);

// Add alone for comparison: the steps never close (one rank never marks
// again, bounded by max_open_steps) - measures the buffering cost only.
void BM_AddOnly(benchmark::State& state) {
  std::unique_ptr<Job> job = MakeJob(1, 10'000);
  DriftClock clock;
  StepAssembler assembler(&job->strings, &job->groups, &clock, {}, [](ClosedStep&&) {});
  assembler.OnDeviceOpened(0);
  const std::vector<DeviceEvent>& ev = job->step_events[0];
  uint64_t events = 0;
  DeviceEvent mark;
  mark.kind = v1::EVENT_KIND_STEP_MARK;
  mark.value = 1;
  assembler.Add(0, mark);
  for (auto _ : state) {
    // Stay inside one step, bounded by max_events_per_device_step.
    state.PauseTiming();
    assembler.Flush();
    mark.value += 1;
    mark.start_ns = mark.end_ns = static_cast<int64_t>(mark.value) * job->step_ns;
    assembler.Add(0, mark);
    state.ResumeTiming();
    for (const DeviceEvent& e : ev) {
      if (e.kind == v1::EVENT_KIND_COLLECTIVE) continue;
      assembler.Add(0, e);
      ++events;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_AddOnly)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace trainscope::collector

BENCHMARK_MAIN();

// Frame time of the Marey graph: one frame = the model re-laid out for a new
// visible range (a pan step, so nothing is cached) + painting its DrawList
// into a 1920x1080 image with QPainter (offscreen). Budget: <= 16 ms.
// The GPU case (8 devices x 4 streams x 100 k kernels, each device's CPU
// row above its streams) runs beside a CPU-only baseline with the same
// devices and operator count, so the two compare within one run.
//
//   QT_QPA_PLATFORM=offscreen build-viewer/bin/viewer_frame_bench
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "trainscope/viewer/marey_model.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {
namespace {

constexpr int kWidth = 1920;
constexpr int kHeight = 1080;

// User + system CPU of the whole process so far, in ms.
double ProcessCpuMs() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

// `devices` x `per_device` operators over consecutive 10-op steps: 90 %
// compute (1-3 us), 10 % collectives joined across devices.
std::unique_ptr<MareyModel> MakeModel(NameTable* names, uint32_t devices, uint32_t per_device) {
  MareyModel::Options options;
  options.max_operators = static_cast<size_t>(devices) * per_device + 1;
  auto model = std::make_unique<MareyModel>(names, options);
  const uint32_t conv = names->Intern("aten::conv2d");
  const uint32_t mm = names->Intern("aten::mm");
  const uint32_t all_reduce = names->Intern("all_reduce");
  uint64_t seed = 42;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  std::vector<OperatorRecord> batch;
  for (uint32_t r = 0; r < devices; ++r) {
    batch.clear();
    batch.reserve(per_device);
    int64_t t = static_cast<int64_t>(next() % 2000);
    for (uint32_t i = 0; i < per_device; ++i) {
      OperatorRecord op;
      op.rank = r;
      op.step = i / 100;
      const bool comm = i % 10 == 9;
      op.op_class = comm ? OpClass::kCollective : OpClass::kCompute;
      op.name = comm ? all_reduce : (i % 2 ? conv : mm);
      op.group_sequence = comm ? i + 1 : 0;
      const int64_t duration = 1000 + static_cast<int64_t>(next() % 2000);
      op.start_ns = t;
      op.end_ns = t + duration;
      op.raw_start_ns = t + r * 1000;
      op.raw_end_ns = op.end_ns + r * 1000;
      batch.push_back(op);
      t += duration + 200;
    }
    model->AddOperators(batch);
  }
  model->SetViewport(kWidth, kHeight);
  model->Draw();  // sorts and prepares once, like the first frame on screen
  return model;
}

// `devices` devices, each with `cpu_ops` CPU operators (launching: 1-3 us)
// and `streams` GPU streams of `per_stream` operators: stream 0 holds
// compute kernels and every tenth an NCCL kernel of the step's all-reduce
// (joined across devices by group and sequence), stream 1 every tenth a
// copy, the others kernels only (0.5-6 us, small gaps: a busy GPU).
std::unique_ptr<MareyModel> MakeGpuModel(NameTable* names, uint32_t devices, uint32_t streams,
                                         uint32_t per_stream, uint32_t cpu_ops) {
  MareyModel::Options options;
  options.max_operators = static_cast<size_t>(devices) * (streams * per_stream + cpu_ops) + 1;
  auto model = std::make_unique<MareyModel>(names, options);
  const uint32_t launch = names->Intern("cudaLaunchKernel");
  const uint32_t gemm = names->Intern("sm90_xmma_gemm_f32f32_tf32f32");
  const uint32_t elementwise = names->Intern("vectorized_elementwise_kernel");
  const uint32_t nccl = names->Intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  const uint32_t copy = names->Intern("Memcpy HtoD (Pinned -> Device)");
  const uint32_t group = names->Intern("0");
  uint64_t seed = 7;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  std::vector<OperatorRecord> batch;
  for (uint32_t r = 0; r < devices; ++r) {
    batch.clear();
    int64_t t = static_cast<int64_t>(next() % 2000);
    for (uint32_t i = 0; i < cpu_ops; ++i) {
      OperatorRecord op;
      op.rank = r;
      op.step = static_cast<uint64_t>(i) * per_stream / cpu_ops / 100;
      op.op_class = OpClass::kCompute;
      op.name = launch;
      const int64_t duration = 1000 + static_cast<int64_t>(next() % 2000);
      op.start_ns = op.raw_start_ns = t;
      op.end_ns = op.raw_end_ns = t + duration;
      batch.push_back(op);
      t += static_cast<int64_t>(duration * 4 / 3) * per_stream / cpu_ops;
    }
    for (uint32_t s = 0; s < streams; ++s) {
      int64_t at = static_cast<int64_t>(next() % 2000);
      for (uint32_t i = 0; i < per_stream; ++i) {
        OperatorRecord op;
        op.rank = r;
        op.step = i / 100;
        op.gpu_stream = 7 + s;
        const bool tenth = i % 10 == 9;
        op.op_class = tenth && s == 0   ? OpClass::kGpuCollective
                      : tenth && s == 1 ? OpClass::kGpuCopy
                                        : OpClass::kGpuKernel;
        op.name = op.op_class == OpClass::kGpuCollective ? nccl
                  : op.op_class == OpClass::kGpuCopy     ? copy
                  : i % 2                                ? gemm
                                                         : elementwise;
        if (op.op_class == OpClass::kGpuCollective) {
          op.group = group;
          op.group_sequence = i + 1;
        }
        const int64_t duration = 500 + static_cast<int64_t>(next() % 5500);
        op.start_ns = op.raw_start_ns = at;
        op.end_ns = op.raw_end_ns = at + duration;
        batch.push_back(op);
        at += duration + 100 + static_cast<int64_t>(next() % 400);
      }
    }
    model->AddOperators(batch);
  }
  model->SetViewport(kWidth, kHeight);
  model->Draw();
  return model;
}

// `name` names the saved frame (MAREY_BENCH_SAVE).
void RunFrames(benchmark::State& state, MareyModel* model, const char* name) {
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  const int64_t start = model->view_start();
  const int64_t span = model->view_end() - model->view_start();
  int64_t shift = 0;
  size_t primitives = 0;
  double layout_ns = 0;  // the model's share of the frames (wall), the rest is painting
  for (auto _ : state) {
    // A pan by one pixel: the layout is recomputed, as on every interaction.
    shift = (shift + span / kWidth) % (span / 50 + 1);
    model->SetTimeRange(start + shift, start + shift + span);
    const auto laid = std::chrono::steady_clock::now();
    const DrawList& list = model->Draw();
    layout_ns +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - laid).count();
    primitives = list.PrimitiveCount();
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
    painter.end();
    benchmark::DoNotOptimize(image.constBits());
  }
  // MAREY_BENCH_SAVE=DIR keeps the last frame of each case, to look at.
  if (const char* dir = std::getenv("MAREY_BENCH_SAVE"); dir != nullptr) {
    image.save(QString::fromStdString(std::string(dir) + "/" + name + ".png"));
  }
  const MareyModel::FrameStats stats = model->frame_stats();
  state.counters["operators"] = static_cast<double>(model->operator_count());
  state.counters["rows"] = static_cast<double>(stats.rows);
  state.counters["drawn_ops"] = static_cast<double>(stats.individual_operators);
  state.counters["merged_bins"] = static_cast<double>(stats.merged_bins);
  state.counters["joins"] = static_cast<double>(stats.joins);
  state.counters["primitives"] = static_cast<double>(primitives);
  state.counters["dense"] = stats.dense ? 1 : 0;
  state.counters["layout_ms"] =
      state.iterations() > 0 ? layout_ns / 1e6 / static_cast<double>(state.iterations()) : 0;
}

// 1,024 devices x 10,000 operators, all of them in view.
void BM_MareyFrame_1024Devices_10kOpsEach(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = MakeModel(&names, 1024, 10'000);
  RunFrames(state, model.get(), __func__);
}
BENCHMARK(BM_MareyFrame_1024Devices_10kOpsEach)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// 64 devices x 1 M operators in the session, the whole session in view.
void BM_MareyFrame_64Devices_1MOpsEach(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = MakeModel(&names, 64, 1'000'000);
  RunFrames(state, model.get(), __func__);
}
BENCHMARK(BM_MareyFrame_64Devices_1MOpsEach)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The same 64 x 1 M session zoomed to 1/1000 of it (joining bands drawn).
void BM_MareyFrame_64Devices_1MOpsEach_Zoomed(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = [] {
    auto m = MakeModel(&names, 64, 1'000'000);
    const int64_t span = m->view_end() - m->view_start();
    m->SetTimeRange(m->view_start() + span / 2, m->view_start() + span / 2 + span / 1000);
    m->SetViewport(kWidth, 64 * 40);
    return m;
  }();
  RunFrames(state, model.get(), __func__);
}
BENCHMARK(BM_MareyFrame_64Devices_1MOpsEach_Zoomed)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// GPU: 8 devices x 4 streams x 100 k kernels (3.2 M) and 100 k CPU
// operators per device, the whole session in view: 40 rows.
void BM_MareyFrame_8Devices_4Streams_100kKernelsEach(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = MakeGpuModel(&names, 8, 4, 100'000, 100'000);
  RunFrames(state, model.get(), __func__);
}
BENCHMARK(BM_MareyFrame_8Devices_4Streams_100kKernelsEach)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// Its CPU-only baseline: the same 8 devices and 4 M operators, all on the
// devices' CPU rows (8 rows of 500 k).
void BM_MareyFrame_8Devices_CpuOnly_500kOpsEach(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = MakeModel(&names, 8, 500'000);
  RunFrames(state, model.get(), __func__);
}
BENCHMARK(BM_MareyFrame_8Devices_CpuOnly_500kOpsEach)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The GPU session zoomed to 1/1000 of it: kernels drawn one by one, NCCL
// kernels joined across devices.
void BM_MareyFrame_8Devices_4Streams_100kKernelsEach_Zoomed(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = [] {
    auto m = MakeGpuModel(&names, 8, 4, 100'000, 100'000);
    const int64_t span = m->view_end() - m->view_start();
    m->SetTimeRange(m->view_start() + span / 2, m->view_start() + span / 2 + span / 1000);
    return m;
  }();
  RunFrames(state, model.get(), __func__);
}
BENCHMARK(BM_MareyFrame_8Devices_4Streams_100kKernelsEach_Zoomed)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

// A live 4-rank job after a long run (the synthetic job: 40 computes and 3
// all-reduces per step and device, one straggler), the whole run in view,
// as after a double-click: issue 23 measured 60-200 ms per frame here with
// every collective drawn as a band. Each frame first appends the next
// step's operators and step record, as the live feed does, so the frame
// includes re-preparing the tracks. Budget: <= 16 ms.
void LiveWholeRun(benchmark::State& state, uint32_t steps) {
  NameTable names;
  MareyModel::Options options;
  MareyModel model(&names, options);
  SyntheticJobOptions job_options;
  job_options.devices = 4;
  job_options.steps = steps;
  const JobData job = GenerateSyntheticJob(job_options);
  const std::vector<OperatorRecord> all = InternOperators(job.operators, &names);
  // The first 90 % of the steps are loaded; the frames append the rest.
  const uint64_t loaded = steps * 9 / 10;
  std::vector<OperatorRecord> first;
  std::map<uint64_t, std::vector<OperatorRecord>> later;
  for (const OperatorRecord& op : all) {
    if (op.step <= loaded) {
      first.push_back(op);
    } else {
      later[op.step].push_back(op);
    }
  }
  model.AddOperators(first);
  std::map<uint64_t, const StepRecord*> records;
  for (const StepRecord& step : job.steps) {
    records[step.step] = &step;
    if (step.step <= loaded) model.AddStep(step);
  }
  model.SetViewport(kWidth, kHeight);
  model.ResetZoom();
  model.Draw();
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  auto next = later.begin();
  size_t primitives = 0;
  double layout_ns = 0;  // appending the step and laying the frame out; the rest is painting
  // The process's CPU (every thread's): Qt hands large fills to its thread
  // pool, whose time the CPU column (the calling thread's) leaves out.
  const double process_cpu_start = ProcessCpuMs();
  for (auto _ : state) {
    const auto laid = std::chrono::steady_clock::now();
    if (next != later.end()) {
      model.AddOperators(next->second);
      if (auto it = records.find(next->first); it != records.end()) model.AddStep(*it->second);
      ++next;
    } else {
      model.SetViewport(kWidth, kHeight - (state.iterations() % 2));  // force a new layout
    }
    const DrawList& list = model.Draw();
    layout_ns +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - laid).count();
    primitives = list.PrimitiveCount();
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
    painter.end();
    benchmark::DoNotOptimize(image.constBits());
  }
  const double process_cpu_ms = ProcessCpuMs() - process_cpu_start;
  state.counters["layout_ms"] =
      state.iterations() > 0 ? layout_ns / 1e6 / static_cast<double>(state.iterations()) : 0;
  state.counters["process_cpu_ms"] =
      state.iterations() > 0 ? process_cpu_ms / static_cast<double>(state.iterations()) : 0;
  if (const char* dir = std::getenv("MAREY_BENCH_SAVE"); dir != nullptr) {
    image.save(QString::fromStdString(std::string(dir) + "/live_whole_run_" +
                                      std::to_string(steps) + ".png"));
  }
  const MareyModel::FrameStats stats = model.frame_stats();
  state.counters["operators"] = static_cast<double>(model.operator_count());
  state.counters["drawn_ops"] = static_cast<double>(stats.individual_operators);
  state.counters["merged_bins"] = static_cast<double>(stats.merged_bins);
  state.counters["merged_comm_bins"] = static_cast<double>(stats.merged_comm_bins);
  state.counters["joins"] = static_cast<double>(stats.joins);
  state.counters["primitives"] = static_cast<double>(primitives);
}

void BM_MareyFrame_Live4Ranks_1000Steps_WholeRun(benchmark::State& state) {
  LiveWholeRun(state, 1000);
}
BENCHMARK(BM_MareyFrame_Live4Ranks_1000Steps_WholeRun)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

void BM_MareyFrame_Live4Ranks_10000Steps_WholeRun(benchmark::State& state) {
  LiveWholeRun(state, 10000);
}
BENCHMARK(BM_MareyFrame_Live4Ranks_10000Steps_WholeRun)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

}  // namespace
}  // namespace trainscope::viewer

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QGuiApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

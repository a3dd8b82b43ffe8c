// Frame time of the Marey graph: one frame = the model re-laid out for a new
// visible range (a pan step, so nothing is cached) + painting its DrawList
// into a 1920x1080 image with QPainter (offscreen). Budget: <= 16 ms.
//
//   QT_QPA_PLATFORM=offscreen build-viewer/bin/viewer_frame_bench
#include <benchmark/benchmark.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <cstdlib>
#include <memory>

#include "trainscope/viewer/marey_model.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {
namespace {

constexpr int kWidth = 1920;
constexpr int kHeight = 1080;

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

void RunFrames(benchmark::State& state, MareyModel* model) {
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  const int64_t start = model->view_start();
  const int64_t span = model->view_end() - model->view_start();
  int64_t shift = 0;
  size_t primitives = 0;
  for (auto _ : state) {
    // A pan by one pixel: the layout is recomputed, as on every interaction.
    shift = (shift + span / kWidth) % (span / 50 + 1);
    model->SetTimeRange(start + shift, start + shift + span);
    const DrawList& list = model->Draw();
    primitives = list.PrimitiveCount();
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
    painter.end();
    benchmark::DoNotOptimize(image.constBits());
  }
  const MareyModel::FrameStats stats = model->frame_stats();
  state.counters["operators"] = static_cast<double>(model->operator_count());
  state.counters["rows"] = static_cast<double>(stats.rows);
  state.counters["drawn_ops"] = static_cast<double>(stats.individual_operators);
  state.counters["merged_bins"] = static_cast<double>(stats.merged_bins);
  state.counters["primitives"] = static_cast<double>(primitives);
  state.counters["dense"] = stats.dense ? 1 : 0;
}

// 1,024 devices x 10,000 operators, all of them in view.
void BM_MareyFrame_1024Devices_10kOpsEach(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = MakeModel(&names, 1024, 10'000);
  RunFrames(state, model.get());
}
BENCHMARK(BM_MareyFrame_1024Devices_10kOpsEach)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// 64 devices x 1 M operators in the session, the whole session in view.
void BM_MareyFrame_64Devices_1MOpsEach(benchmark::State& state) {
  static NameTable names;
  static std::unique_ptr<MareyModel> model = MakeModel(&names, 64, 1'000'000);
  RunFrames(state, model.get());
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
  RunFrames(state, model.get());
}
BENCHMARK(BM_MareyFrame_64Devices_1MOpsEach_Zoomed)->Unit(benchmark::kMillisecond)->MinTime(1.0);

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

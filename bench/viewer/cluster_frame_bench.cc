// Frame time of the cluster views (issue 24) at 1,024 devices: one frame =
// the view re-laid out (the viewport changes by a pixel, so nothing cached
// is reused) + its DrawList painted into a 1920x1080 image with QPainter
// (offscreen). Budget: <= 16 ms. The traffic matrix runs beside them as the
// baseline of the same run. The job: the synthetic job with 1,024 devices
// on 128 hosts in 8 racks (a ring per all-reduce, one slow link).
//
//   QT_QPA_PLATFORM=offscreen build/bin/viewer_cluster_bench
#include <benchmark/benchmark.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "trainscope/viewer/synthetic_job.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {
namespace {

constexpr int kWidth = 1920;
constexpr int kHeight = 1080;

ViewerState* Job() {
  static ViewerState* state = [] {
    SyntheticJobOptions options;
    options.devices = 1024;
    options.hosts = 128;
    options.racks = 8;
    options.steps = 8;
    options.compute_ops_per_step = 4;
    options.collectives_per_step = 1;
    options.straggler.reset();
    options.slow_link = std::make_pair(12u, 13u);
    auto* s = new ViewerState();
    s->Load(GenerateSyntheticJob(options));
    return s;
  }();
  return state;
}

template <typename Layout>
void Frame(benchmark::State& bench, Layout* layout) {
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  int frame = 0;
  size_t primitives = 0;
  for (auto _ : bench) {
    layout->SetViewport(kWidth - (frame++ % 2), kHeight);
    const DrawList& list = layout->Draw();
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
    painter.end();
    primitives = list.PrimitiveCount();
    benchmark::DoNotOptimize(image.constBits());
  }
  bench.counters["primitives"] = static_cast<double>(primitives);
}

void RunView(benchmark::State& bench, ClusterView* view, ClusterLevel level) {
  view->SetLevel(level);
  Frame(bench, view);
}

// The layout alone (no painting): what a frame costs before QPainter (the
// chord's angles are kept across sizes: its shapes only).
void LayoutOnly(benchmark::State& bench, ClusterView* view, ClusterLevel level) {
  view->SetLevel(level);
  int frame = 0;
  for (auto _ : bench) {
    view->SetViewport(kWidth - (frame++ % 2), kHeight);
    benchmark::DoNotOptimize(view->Draw().PrimitiveCount());
  }
}

void BM_TrafficMatrix(benchmark::State& bench) { Frame(bench, &Job()->traffic_matrix); }
void BM_Topology(benchmark::State& bench) {
  RunView(bench, &Job()->topology, static_cast<ClusterLevel>(bench.range(0)));
}
void BM_Chord(benchmark::State& bench) {
  RunView(bench, &Job()->chord, static_cast<ClusterLevel>(bench.range(0)));
}
void BM_HilbertRing(benchmark::State& bench) {
  RunView(bench, &Job()->hilbert_ring, static_cast<ClusterLevel>(bench.range(0)));
}
void BM_ChordLayoutOnly(benchmark::State& bench) {
  LayoutOnly(bench, &Job()->chord, static_cast<ClusterLevel>(bench.range(0)));
}
void BM_HilbertRingLayoutOnly(benchmark::State& bench) {
  LayoutOnly(bench, &Job()->hilbert_ring, static_cast<ClusterLevel>(bench.range(0)));
}
// A frame of the chord's ~200 ms transition between two layouts (the
// device level, a step range apart): the interpolated angles re-made and
// painted each frame.
void BM_ChordTransition(benchmark::State& bench) {
  ChordLayout& chord = Job()->chord;
  TrafficModel& traffic = Job()->traffic;
  chord.SetLevel(ClusterLevel::kDevice);
  traffic.SetStepRange(1, 4);
  chord.Draw();
  traffic.SetStepRange(5, 8);
  chord.Draw();  // a new layout: a transition from the first
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  int frame = 0;
  for (auto _ : bench) {
    chord.SetTransition((frame++ % 9 + 1) / 10.0);
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, chord.Draw());
    painter.end();
    benchmark::DoNotOptimize(image.constBits());
  }
  chord.SetTransition(1);
  traffic.SetStepRange(std::nullopt, std::nullopt);
}
// The chord's angles laid out again (the measure switched each frame: the
// crossing-reducing order, the arcs and ribbons from the aggregated
// traffic) and painted: what a frame costs when the data changes.
void BM_ChordRelayout(benchmark::State& bench) {
  ChordLayout& chord = Job()->chord;
  chord.SetLevel(static_cast<ClusterLevel>(bench.range(0)));
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  int frame = 0;
  for (auto _ : bench) {
    chord.SetMeasure(frame++ % 2 ? ChordLayout::Measure::kBytes
                                 : ChordLayout::Measure::kTransferTime);
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, chord.Draw());
    painter.end();
    benchmark::DoNotOptimize(image.constBits());
  }
  chord.SetMeasure(ChordLayout::Measure::kTransferTime);
}
// The Hilbert ring zoomed into one rack (128 devices) of a 32 x 32 mesh.
void BM_HilbertRingZoomed(benchmark::State& bench) {
  HilbertRingLayout& ring = Job()->hilbert_ring;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> mesh;
  for (uint32_t r = 0; r < 1024; ++r) mesh[r] = {r % 32, r / 32};
  ring.SetCoordinates(mesh);
  ring.ZoomInto({ClusterLevel::kRack, 0});
  RunView(bench, &ring, ClusterLevel::kDevice);
  ring.FocusBlock(std::nullopt);
  ring.SetCoordinates({});
}
void BM_Trend(benchmark::State& bench) {
  RunView(bench, &Job()->trend, static_cast<ClusterLevel>(bench.range(0)));
}

// Arguments: 0 device, 1 host, 2 rack.
BENCHMARK(BM_TrafficMatrix)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Topology)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Chord)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HilbertRing)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Trend)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChordTransition)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChordRelayout)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HilbertRingZoomed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChordLayoutOnly)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HilbertRingLayoutOnly)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trainscope::viewer

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

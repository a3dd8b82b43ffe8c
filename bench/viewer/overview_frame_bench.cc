// Paint time of the Training overview as a live job grows (issue 23.5: the
// viewer took 33-81 % of a core following a 4-rank job, mostly repainting
// these lines): the overview of 4 devices over N jittered steps (6 lines of
// up to two points per pixel column, 1.5-2.5 px, one dashed) painted into a
// 1200x420 image by DrawListPainter (wide lines as segments), beside the
// baseline of the same lines each stroked whole with drawPolyline (how they
// were painted before), in the same run.
//
//   QT_QPA_PLATFORM=offscreen build/bin/viewer_overview_bench
#include <benchmark/benchmark.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <random>
#include <vector>

#include "trainscope/viewer/overview_model.h"
#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {
namespace {

constexpr int kWidth = 1200;
constexpr int kHeight = 420;

DrawList Overview(int steps) {
  OverviewModel model;
  std::mt19937 rng(1);
  std::normal_distribution<double> jitter(0, 8e6);
  for (int s = 0; s < steps; ++s) {
    StepRecord record;
    record.step = static_cast<uint64_t>(s);
    record.start_ns = s * 100'000'000LL;
    record.end_ns = record.start_ns + 100'000'000LL;
    for (uint32_t rank = 0; rank < 4; ++rank) {
      DeviceStepRecord d;
      d.rank = rank;
      d.step_time_ns = 95'000'000 + static_cast<int64_t>(jitter(rng));
      d.collective_ns = 20'000'000 + static_cast<int64_t>(jitter(rng) / 2);
      d.wait_ns = 10'000'000 + static_cast<int64_t>(jitter(rng) / 3);
      d.compute_ns = 60'000'000;
      record.devices.push_back(d);
    }
    model.AddStep(record);
  }
  model.SetViewport(kWidth, kHeight);
  return model.Draw();
}

void BM_OverviewPaint(benchmark::State& state) {
  const DrawList list = Overview(static_cast<int>(state.range(0)));
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  for (auto _ : state) {
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
  }
}

// The baseline: each line stroked whole (the painter's old way).
void BM_OverviewPaintWholePolylines(benchmark::State& state) {
  DrawList list = Overview(static_cast<int>(state.range(0)));
  std::vector<Polyline> lines = std::move(list.polylines);
  list.polylines.clear();
  QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
  std::vector<QPointF> points;
  for (auto _ : state) {
    QPainter painter(&image);
    DrawListPainter::Paint(&painter, list);
    painter.setRenderHint(QPainter::Antialiasing, true);
    for (const Polyline& line : lines) {
      points.clear();
      for (const PointF& p : line.points) points.emplace_back(p.x, p.y);
      QPen pen(DrawListPainter::ToQColor(line.color), line.width);
      pen.setCapStyle(Qt::FlatCap);
      if (line.dashed) pen.setStyle(Qt::DashLine);
      painter.setPen(pen);
      painter.drawPolyline(points.data(), static_cast<int>(points.size()));
    }
  }
}

BENCHMARK(BM_OverviewPaint)->Arg(100)->Arg(600)->Arg(2400)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OverviewPaintWholePolylines)
    ->Arg(100)
    ->Arg(600)
    ->Arg(2400)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trainscope::viewer

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

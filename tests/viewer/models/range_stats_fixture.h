// A hand-computed two-device job for the range statistics tests: three
// steps of 100 ns, each device's step figures splitting its step exactly,
// nested CPU operators and one GPU stream on rank 1.
//
//   step:        1 [0,100)      2 [100,200)                 3 [200,300)
//   rank 0 CPU:  A [0,50]       B [100,180] > C [110,130],   B [200,280] > C [210,260],
//                                             C [140,150]    D (collective) [280,290]
//   rank 1 CPU:                 B [100,190] > C [100,120]    C [200,210]
//   rank 1 GPU:                 K [120,150]                  K [220,230], K [240,260]
#ifndef TRAINSCOPE_TESTS_VIEWER_MODELS_RANGE_STATS_FIXTURE_H_
#define TRAINSCOPE_TESTS_VIEWER_MODELS_RANGE_STATS_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class RangeStatsFixture : public ::testing::Test {
 protected:
  // One device's step: wall, data wait, compute, collective wait, transfer, idle.
  struct Figures {
    int64_t wall, data_wait, compute, wait, transfer, idle, gpu_busy;
  };

  RangeStatsFixture() : store_(1'000'000) {
    a_ = names_.Intern("A");
    b_ = names_.Intern("B");
    c_ = names_.Intern("C");
    d_ = names_.Intern("D");
    k_ = names_.Intern("K");
    const Figures figures[2][3] = {
        {{100, 10, 50, 20, 5, 15, 0}, {100, 12, 48, 25, 5, 10, 0}, {100, 8, 52, 15, 5, 20, 0}},
        {{100, 5, 60, 10, 5, 20, 0}, {100, 6, 58, 16, 6, 14, 40}, {100, 4, 62, 9, 5, 20, 25}},
    };
    for (uint64_t s = 1; s <= 3; ++s) {
      StepRecord step;
      step.step = s;
      step.start_ns = static_cast<int64_t>(s - 1) * 100;
      step.end_ns = step.start_ns + 100;
      for (uint32_t rank = 0; rank < 2; ++rank) {
        const Figures& f = figures[rank][s - 1];
        DeviceStepRecord d;
        d.rank = rank;
        d.start_ns = step.start_ns;
        d.end_ns = step.end_ns;
        d.step_time_ns = f.wall;
        d.data_wait_ns = f.data_wait;
        d.compute_ns = f.compute;
        d.wait_ns = f.wait;
        d.transfer_ns = f.transfer;
        d.collective_ns = f.wait + f.transfer;
        d.idle_ns = f.idle;
        d.has_gpu = f.gpu_busy > 0;
        d.gpu_busy_ns = f.gpu_busy;
        step.devices.push_back(d);
      }
      store_.AddStep(step);
    }
    store_.AddOperators({
        Op(0, 0, 50, a_, 1),
        Op(0, 100, 180, b_, 2),
        Op(0, 110, 130, c_, 2),
        Op(0, 140, 150, c_, 2),
        Op(0, 200, 280, b_, 3),
        Op(0, 210, 260, c_, 3),
        Op(0, 280, 290, d_, 3, OpClass::kCollective),
        Op(1, 100, 190, b_, 2),
        Op(1, 100, 120, c_, 2),
        Op(1, 200, 210, c_, 3),
        Op(1, 120, 150, k_, 2, OpClass::kGpuKernel),
        Op(1, 220, 230, k_, 3, OpClass::kGpuKernel),
        Op(1, 240, 260, k_, 3, OpClass::kGpuKernel),
    });
    store_.Prepare();
  }

  static OperatorRecord Op(uint32_t rank, int64_t start, int64_t end, uint32_t name, uint64_t step,
                           OpClass cls = OpClass::kCompute) {
    OperatorRecord op;
    op.rank = rank;
    op.start_ns = op.raw_start_ns = start;
    op.end_ns = op.raw_end_ns = end;
    op.name = name;
    op.op_class = cls;
    op.step = step;
    return op;
  }

  NameTable names_;
  MareyTrackStore store_;
  uint32_t a_ = 0, b_ = 0, c_ = 0, d_ = 0, k_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_TESTS_VIEWER_MODELS_RANGE_STATS_FIXTURE_H_

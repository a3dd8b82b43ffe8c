// StepAssembler with GPU work: each GPU event belongs to the step whose
// launch made it, and a step waits (boundedly) for its GPU work.
#include <memory>
#include <vector>

#include "analysis/synthetic_events.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/step_assembler.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using testing::Collective;
using testing::FixedOffsetClock;
using testing::Gpu;
using testing::Mark;
using testing::NcclKernel;
using testing::Op;
using testing::RuntimeCall;

constexpr int64_t kSecond = 1'000'000'000;

class StepAssemblerGpuTest : public ::testing::Test {
 protected:
  void Make(uint32_t world, StepAssemblerOptions options = {}) {
    groups_.set_world_size(world);
    assembler_ = std::make_unique<StepAssembler>(
        &strings_, &groups_, &clock_, options,
        [this](ClosedStep&& s) { closed_.push_back(std::move(s)); });
    for (uint32_t r = 0; r < world; ++r) assembler_->OnDeviceOpened(r);
  }

  const ClosedStep* Step(uint64_t step) const {
    for (const ClosedStep& s : closed_) {
      if (s.report.step() == step) return &s;
    }
    return nullptr;
  }
  static const v1::DeviceStep* Device(const ClosedStep& s, uint32_t rank) {
    for (const v1::DeviceStep& d : s.report.devices()) {
      if (d.rank() == rank) return &d;
    }
    return nullptr;
  }
  DeviceEvent Kernel(uint32_t stream, int64_t start, int64_t end, int64_t launch) {
    return Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, stream, start, end, ++correlation_, launch, mm_);
  }

  JobStrings strings_;
  GroupDirectory groups_{&strings_};
  FixedOffsetClock clock_;
  std::vector<ClosedStep> closed_;
  std::unique_ptr<StepAssembler> assembler_;
  uint64_t correlation_ = 0;
  const uint32_t mm_ = strings_.Intern("aten::mm");
  const uint32_t gemm_ = strings_.Intern("sm90_gemm");
  const uint32_t nccl_ = strings_.Intern("ncclDevKernel_AllReduce");
  const uint32_t allreduce_ = strings_.Intern("nccl:all_reduce");
  const uint32_t world_ = strings_.Intern("default_pg");
};

TEST_F(StepAssemblerGpuTest, GpuWorkBelongsToTheStepOfItsLaunchWheneverItRuns) {
  Make(1);
  assembler_->Add(0, Mark(1, 0));
  assembler_->Add(0, Op(mm_, 100, 900));
  // Launched at 850 in step 1, runs after step 2's mark.
  assembler_->Add(0, Kernel(7, 1100, 1500, 850));
  assembler_->Add(0, Mark(2, 1000));
  assembler_->Add(0, Op(mm_, 1100, 1900));
  // No launch known: its own start places it.
  assembler_->Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 1600, 1700, 0, 0));
  assembler_->Add(0, Mark(3, 2000));
  assembler_->Add(0, Op(mm_, 2100, 2900));
  assembler_->Add(0, Kernel(7, 2100, 2200, 2050));  // step 3's: passes step 2 on stream 7
  ASSERT_NE(Step(1), nullptr);
  const v1::DeviceStep& one = *Device(*Step(1), 0);
  EXPECT_TRUE(one.has_gpu());
  EXPECT_EQ(one.gpu_busy_ns(), 400);
  EXPECT_EQ(one.compute_ns(), 400);  // device time
  EXPECT_EQ(one.cpu_compute_ns(), 800);
  EXPECT_EQ(one.kernels(), 1u);
  ASSERT_EQ(one.top_kernels_size(), 1);
  EXPECT_EQ(one.top_kernels(0).launch_op(), "aten::mm");
  ASSERT_NE(Step(2), nullptr);
  const v1::DeviceStep& two = *Device(*Step(2), 0);
  EXPECT_EQ(two.gpu_busy_ns(), 100);
  // Step 2's window [1000, 2000): step 1's kernel ran in [1100, 1500).
  EXPECT_EQ(two.idle_ns(), 1000 - 400 - 100);
  // GPU work becomes stream operators of its step.
  int kernels = 0;
  for (const OperatorRecord& op : Step(1)->operators) {
    if (op.op_class == v1::OPERATOR_CLASS_GPU_KERNEL) {
      ++kernels;
      EXPECT_EQ(op.gpu_stream, 7u);
      EXPECT_EQ(op.step, 1u);
    }
  }
  EXPECT_EQ(kernels, 1);
}

TEST_F(StepAssemblerGpuTest, AStepWaitsForEachStreamToDeliverWorkLaunchedAfterIt) {
  Make(1);
  assembler_->ExpectGpu(0);  // an import: the host's events all come first
  assembler_->Add(0, Mark(1, 0));
  assembler_->Add(0, Op(mm_, 100, 900));
  assembler_->Add(0, Mark(2, 1000));
  assembler_->Add(0, Op(mm_, 1100, 1900));
  assembler_->Add(0, Mark(3, 2000));
  assembler_->Add(0, Op(mm_, 2100, 2900));
  EXPECT_EQ(Step(1), nullptr) << "closed before its GPU work arrived";
  assembler_->Add(0, Kernel(7, 200, 400, 150));
  assembler_->Add(0, NcclKernel(nccl_, world_, 1, 20, 950, 1200, ++correlation_, 800));
  assembler_->Add(0, Kernel(7, 1200, 1300, 1150));  // stream 7 passed step 1, stream 20 not
  EXPECT_EQ(Step(1), nullptr);
  assembler_->Add(0, NcclKernel(nccl_, world_, 2, 20, 1950, 2200, ++correlation_, 1800));
  ASSERT_NE(Step(1), nullptr);
  const v1::DeviceStep& one = *Device(*Step(1), 0);
  EXPECT_EQ(one.gpu_busy_ns(), 200);
  EXPECT_EQ(one.collective_ns(), 250);
  EXPECT_EQ(one.kernels(), 2u);
  EXPECT_EQ(one.gpu_streams(), 2u);
  EXPECT_EQ(assembler_->stats().events_late, 0u);
  // Step 2 has all its work once stream 20 is past it too.
  EXPECT_EQ(Step(2), nullptr);
  assembler_->OnDeviceClosed(0);
  ASSERT_NE(Step(2), nullptr);
  EXPECT_EQ(Device(*Step(2), 0)->kernels(), 2u);
}

TEST_F(StepAssemblerGpuTest, AStreamThatFallsSilentHoldsAStepOnlyUntilWorkOfAStepLater) {
  Make(1);
  assembler_->Add(0, Mark(1, 0));
  assembler_->Add(0, Gpu(v1::EVENT_KIND_GPU_MEMCPY, 0, 9, 100, 200, ++correlation_, 50, 0, 64,
                         v1::COPY_KIND_HOST_TO_DEVICE));  // stream 9: never again
  assembler_->Add(0, Mark(2, 1000));
  assembler_->Add(0, Kernel(7, 1100, 1200, 1050));
  assembler_->Add(0, Mark(3, 2000));
  assembler_->Add(0, Op(mm_, 2100, 2200));
  EXPECT_EQ(Step(1), nullptr);
  assembler_->Add(0, Kernel(7, 2100, 2200, 2050));  // after step 2's end
  ASSERT_NE(Step(1), nullptr);
  EXPECT_EQ(Device(*Step(1), 0)->h2d_copy_ns(), 100);
}

TEST_F(StepAssemblerGpuTest, TheWaitForGpuWorkIsBoundedInTime) {
  StepAssemblerOptions options;
  options.gpu_wait_ns = kSecond;
  Make(1, options);
  assembler_->ExpectGpu(0);  // says it has GPUs, never sends their work
  assembler_->Add(0, Mark(1, 0));
  assembler_->Add(0, Op(mm_, 100, 900));
  assembler_->Add(0, Mark(2, 1000));
  assembler_->Add(0, Op(mm_, 1100, 1900));
  assembler_->Tick(10 * kSecond);
  assembler_->Tick(10 * kSecond + kSecond / 2);
  EXPECT_EQ(Step(1), nullptr);
  assembler_->Tick(11 * kSecond);
  ASSERT_NE(Step(1), nullptr);
  EXPECT_FALSE(Device(*Step(1), 0)->has_gpu());
  EXPECT_EQ(Device(*Step(1), 0)->compute_ns(), 800);  // the host's, as without GPUs
  EXPECT_EQ(assembler_->stats().gpu_waits_timed_out, 1u);
  // It sent no GPU work: its next steps no longer wait.
  assembler_->Add(0, Mark(3, 2000));
  assembler_->Add(0, Op(mm_, 2100, 2900));
  EXPECT_NE(Step(2), nullptr);
}

TEST_F(StepAssemblerGpuTest, WaitingForGpuWorkIsBoundedByTheOpenSteps) {
  StepAssemblerOptions options;
  options.max_open_steps = 3;
  Make(1, options);
  assembler_->ExpectGpu(0);
  for (uint64_t step = 1; step <= 6; ++step) {
    assembler_->Add(0, Mark(step, static_cast<int64_t>(step) * 1000));
    assembler_->Add(0, Op(mm_, step * 1000 + 100, step * 1000 + 900));
  }
  EXPECT_LE(assembler_->stats().open_steps, 3u);
  EXPECT_GE(assembler_->stats().steps_forced, 2u);
  // Work launched in a step that closed is counted as late, not kept.
  const uint64_t late_before = assembler_->stats().events_late;
  assembler_->Add(0, Kernel(7, 1200, 1300, 1100));
  EXPECT_EQ(assembler_->stats().events_late, late_before + 1);
}

TEST_F(StepAssemblerGpuTest, NcclKernelsGiveTheWaitAndHostCollectivesAreNotCountedTwice) {
  Make(2);
  for (uint32_t rank = 0; rank < 2; ++rank) {
    // Rank 1 launches its NCCL kernel 300 later; the host calls return at once.
    const int64_t late = rank == 1 ? 300 : 0;
    assembler_->Add(rank, Mark(1, 0));
    assembler_->Add(rank, Op(mm_, 100, 400 + late));
    assembler_->Add(rank, Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, allreduce_, world_, 1,
                                     400 + late, 410 + late, 4096));
    assembler_->Add(rank, Kernel(7, 150, 450, 120));
    assembler_->Add(rank, NcclKernel(nccl_, world_, 1, 20, 500 + late, 900, ++correlation_,
                                     405 + late, 4096));
    assembler_->Add(rank, Mark(2, 1000));
    assembler_->Add(rank, Op(mm_, 1100, 1200));
    assembler_->Add(rank, Kernel(7, 1100, 1200, 1050));
    assembler_->Add(rank, NcclKernel(nccl_, world_, 2, 20, 1300, 1400, ++correlation_, 1250));
  }
  ASSERT_NE(Step(1), nullptr);
  const v1::DeviceStep& early = *Device(*Step(1), 0);
  const v1::DeviceStep& late = *Device(*Step(1), 1);
  EXPECT_EQ(early.collective_ns(), 400);
  EXPECT_EQ(early.wait_ns(), 300);
  EXPECT_EQ(early.transfer_ns(), 100);
  EXPECT_EQ(early.waited_for_rank(), 1);
  EXPECT_EQ(early.cpu_collective_ns(), 10);
  EXPECT_EQ(late.wait_ns(), 0);
  EXPECT_EQ(late.lateness_ns(), 300);
  EXPECT_EQ(early.lateness_ns(), 0);
  // One ring link per direction, from the NCCL kernels only.
  uint64_t bytes = 0;
  for (const v1::LinkStep& l : Step(1)->report.links()) bytes += l.bytes();
  EXPECT_EQ(bytes, 2u * 4096u);
}

TEST_F(StepAssemblerGpuTest, TrafficComesFromTheNcclKernelsOnce) {
  const TrafficModel model;  // every rank's host backend: gloo (the default)
  Make(2, {.traffic_model = &model});
  for (uint32_t rank = 0; rank < 2; ++rank) {
    assembler_->Add(rank, Mark(1, 0));
    assembler_->Add(rank, Op(mm_, 100, 400));
    assembler_->Add(rank, Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, allreduce_, world_, 1, 400,
                                     410, 4096));
    assembler_->Add(rank, NcclKernel(nccl_, world_, 1, 20, 500, 900, ++correlation_, 405, 4096));
    assembler_->Add(rank, Mark(2, 1000));
    assembler_->Add(rank, Op(mm_, 1100, 1200));
    assembler_->Add(rank, Kernel(7, 1100, 1200, 1050));
    // Step 2's NCCL kernel: stream 20 has passed step 1.
    assembler_->Add(rank, NcclKernel(nccl_, world_, 2, 20, 1300, 1400, ++correlation_, 1250));
  }
  ASSERT_NE(Step(1), nullptr);
  // NCCL's ring over 2 ranks: the whole 4096 bytes each way in 2 messages,
  // once (the host calls' instance would count it again), backend NCCL
  // because the kernels are NCCL's whatever the host's backend.
  const v1::StepReport& report = Step(1)->report;
  ASSERT_EQ(report.traffic_size(), 2);
  for (const v1::PairTraffic& p : report.traffic()) {
    EXPECT_EQ(p.bytes(), 4096u);
    EXPECT_EQ(p.messages(), 2u);
    EXPECT_EQ(p.backend(), "nccl");
    EXPECT_EQ(p.group(), "default_pg");
    EXPECT_EQ(p.duration_ns(), 900 - 500);
  }
}

TEST_F(StepAssemblerGpuTest, HostSyncCallsSayWhyTheDeviceIdled) {
  Make(1);
  assembler_->Add(0, Mark(1, 0));
  assembler_->Add(0, Op(mm_, 0, 300));
  assembler_->Add(0, Kernel(7, 100, 300, 50));
  assembler_->Add(0, RuntimeCall(v1::RUNTIME_CALL_SYNC, 300, 800));
  assembler_->Add(0, RuntimeCall(v1::RUNTIME_CALL_LAUNCH, 850, 860));
  assembler_->Add(0, Mark(2, 1000));
  assembler_->Add(0, Op(mm_, 1000, 1100));
  assembler_->Add(0, Kernel(7, 1100, 1200, 1050));
  ASSERT_NE(Step(1), nullptr);
  const v1::DeviceStep& d = *Device(*Step(1), 0);
  EXPECT_EQ(d.idle_ns(), 800);  // [0, 100) and [300, 1000)
  EXPECT_EQ(d.gpu_idle_host_sync_ns(), 500);
  EXPECT_EQ(d.gpu_idle_launch_bound_ns(), 100);  // [0, 100): in aten::mm
}

// The trace_filter pair: an event of another thread recorded before the
// first mark in the file but after it in time made the step before the mark
// start after its end.
TEST_F(StepAssemblerGpuTest, WhatArrivesBeforeTheFirstMarkButHappensAfterItIsTheNextStep) {
  Make(1);
  assembler_->Add(0, Op(mm_, 100, 300));
  assembler_->Add(0, Op(mm_, 1500, 1600, /*thread=*/2));  // after the mark below
  assembler_->Add(0, Mark(1, 1000));
  assembler_->Add(0, Op(mm_, 1100, 1200));
  assembler_->Add(0, Mark(2, 2000));
  assembler_->Add(0, Op(mm_, 2100, 2200));
  ASSERT_NE(Step(0), nullptr);
  ASSERT_NE(Step(1), nullptr);
  const v1::DeviceStep& zero = *Device(*Step(0), 0);
  EXPECT_LE(zero.start_ns(), zero.end_ns());
  EXPECT_EQ(zero.cpu_compute_ns(), 200);
  EXPECT_EQ(Device(*Step(1), 0)->cpu_compute_ns(), 200);
  EXPECT_EQ(Step(1)->operators.size(), 2u);
}

// ... and when nothing before the first mark happened before it, there is
// no step before it at all (not one from 0 to the mark).
TEST_F(StepAssemblerGpuTest, APreludeThatAllHappensAfterTheFirstMarkIsNoStep) {
  Make(1);
  assembler_->Add(0, Op(mm_, 1500, 1600, /*thread=*/2));
  assembler_->Add(0, Mark(1, 1000));
  assembler_->Add(0, Op(mm_, 1100, 1200));
  assembler_->Add(0, Mark(2, 2000));
  assembler_->Add(0, Op(mm_, 2100, 2200));
  EXPECT_EQ(Step(0), nullptr);
  ASSERT_NE(Step(1), nullptr);
  EXPECT_EQ(Device(*Step(1), 0)->cpu_compute_ns(), 200);
  EXPECT_EQ(assembler_->stats().buffered_events, 1u);  // step 2's
}

}  // namespace
}  // namespace trainscope::collector

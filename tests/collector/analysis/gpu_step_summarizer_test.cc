#include "trainscope/collector/analysis/gpu_step_summarizer.h"

#include <string>
#include <vector>

#include "analysis/synthetic_events.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using testing::FixedOffsetClock;
using testing::Gpu;
using testing::NcclKernel;

class GpuStepSummarizerTest : public ::testing::Test {
 protected:
  GpuStepSummarizerTest() { groups_.set_world_size(2); }

  // Adds `e` of `rank` as a closing step hands it over (aligned).
  void Add(uint32_t rank, const DeviceEvent& e) {
    OperatorRecord op;
    op.rank = rank;
    op.start_ns = clock_.ToReference(rank, e.start_ns);
    op.end_ns = clock_.ToReference(rank, e.end_ns);
    op.name = e.name;
    op.op_class = OperatorRecord::GpuClassOf(e.kind);
    op.gpu_device = e.gpu_device;
    op.gpu_stream = e.gpu_stream;
    op.launch_op = e.launch_op;
    op.group = e.group;
    op.group_sequence = e.group_sequence;
    op.collective_kind = static_cast<v1::CollectiveKind>(
        e.kind == v1::EVENT_KIND_GPU_COLLECTIVE ? e.detail : 0);
    gpu_.Add(e, op, &links_);
  }

  static IntervalSet Set(std::initializer_list<std::pair<int64_t, int64_t>> ivs) {
    IntervalSet s;
    for (const auto& [a, b] : ivs) s.Add(a, b);
    s.Normalize();
    return s;
  }

  JobStrings strings_;
  GroupDirectory groups_{&strings_};
  FixedOffsetClock clock_;
  CollectiveMatcher matcher_{&groups_, &clock_, [] { return 2u; }};
  GpuStepSummarizer gpu_{&strings_, &matcher_};
  CollectiveMatcher::Links links_;
  const uint32_t gemm_ = strings_.Intern("sm90_gemm");
  const uint32_t relu_kernel_ = strings_.Intern("relu_kernel");
  const uint32_t nccl_ = strings_.Intern("ncclDevKernel_AllReduce");
  const uint32_t mm_ = strings_.Intern("aten::mm");
  const uint32_t relu_ = strings_.Intern("aten::relu");
  const uint32_t world_ = strings_.Intern("default_pg");
};

TEST_F(GpuStepSummarizerTest, BusyIsTheUnionOfComputeKernelsOverStreamsAndCopiesByKind) {
  gpu_.Begin();
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 100, 300, 1, 50, mm_, 6000));
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, relu_kernel_, 8, 200, 400, 2, 60, relu_));  // overlaps
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 600, 700, 3, 70, mm_));
  Add(0, Gpu(v1::EVENT_KIND_GPU_MEMCPY, 0, 9, 0, 50, 4, 10, 0, 1 << 20,
             v1::COPY_KIND_HOST_TO_DEVICE));
  Add(0, Gpu(v1::EVENT_KIND_GPU_MEMCPY, 0, 9, 40, 70, 5, 11, 0, 1 << 20,
             v1::COPY_KIND_HOST_TO_DEVICE));
  Add(0, Gpu(v1::EVENT_KIND_GPU_MEMCPY, 0, 9, 700, 720, 6, 12, 0, 64,
             v1::COPY_KIND_DEVICE_TO_HOST));
  Add(0, Gpu(v1::EVENT_KIND_GPU_MEMSET, 0, 9, 720, 725, 7, 13));
  ASSERT_TRUE(gpu_.any());
  v1::DeviceStep d;
  d.set_collective_ns(123);  // the host's
  gpu_.Fill(0, 0, 1000, {}, 0, &d);
  EXPECT_TRUE(d.has_gpu());
  EXPECT_EQ(d.gpu_busy_ns(), 400);  // [100, 400) and [600, 700)
  EXPECT_EQ(d.compute_ns(), 400);
  EXPECT_EQ(d.h2d_copy_ns(), 70);
  EXPECT_EQ(d.d2h_copy_ns(), 20);
  EXPECT_EQ(d.other_copy_ns(), 5);
  EXPECT_EQ(d.copy_stall_ns(), 70 + 20);  // no kernel ran beside them
  EXPECT_EQ(d.kernels(), 3u);
  EXPECT_EQ(d.gpu_streams(), 3u);
  // Idle: no kernel or copy in [70, 100), [400, 600) and [725, 1000).
  EXPECT_EQ(d.idle_ns(), 30 + 200 + 275);
  EXPECT_EQ(d.flops(), 6000u);
  EXPECT_DOUBLE_EQ(d.flops_per_second(), 6000 * 1e9 / 400);
  // Without NCCL kernels the collective figures are left to the host's.
  EXPECT_EQ(d.collective_ns(), 123);
  ASSERT_EQ(d.top_kernels_size(), 2);
  EXPECT_EQ(d.top_kernels(0).name(), "sm90_gemm");
  EXPECT_EQ(d.top_kernels(0).count(), 2u);
  EXPECT_EQ(d.top_kernels(0).total_ns(), 300);
  EXPECT_EQ(d.top_kernels(0).launch_op(), "aten::mm");
  EXPECT_EQ(d.top_kernels(0).op_class(), v1::OPERATOR_CLASS_GPU_KERNEL);
  EXPECT_EQ(d.top_kernels(1).name(), "relu_kernel");
}

TEST_F(GpuStepSummarizerTest, HostFlopsStandInWhenKernelsCarryNone) {
  gpu_.Begin();
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 100, 300, 1, 50));
  v1::DeviceStep d;
  gpu_.Fill(0, 0, 1000, {}, 800, &d);
  EXPECT_EQ(d.flops(), 800u);
  EXPECT_DOUBLE_EQ(d.flops_per_second(), 800 * 1e9 / 200);
}

TEST_F(GpuStepSummarizerTest, NcclWaitIsUntilTheLastPeerKernelStartsOnTheReferenceClock) {
  clock_.set_offset(1, -1000);  // rank 1's clock is 1 us ahead
  const DeviceEvent mine = NcclKernel(nccl_, world_, 1, 20, 500, 900, 1, 400, 4096);
  // Rank 1's kernel starts at 1700 - 1000 = 700 on the reference clock.
  const DeviceEvent theirs = NcclKernel(nccl_, world_, 1, 20, 1700, 1900, 9, 1600, 4096);
  matcher_.NoteArrival(0, mine, 5);
  matcher_.NoteArrival(1, theirs, 5);
  gpu_.Begin();
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 100, 600, 2, 50));
  Add(0, mine);
  v1::DeviceStep d;
  gpu_.Fill(0, 0, 1000, {}, 0, &d);
  EXPECT_EQ(d.collective_ns(), 400);
  EXPECT_EQ(d.wait_ns(), 200);
  EXPECT_EQ(d.transfer_ns(), 200);
  EXPECT_EQ(d.waited_for_rank(), 1);
  EXPECT_EQ(d.lateness_ns(), 0);  // the first to arrive
  EXPECT_EQ(d.comm_compute_overlap_ns(), 100);  // [500, 600)
  EXPECT_EQ(d.kernels(), 2u);

  // Rank 1, the late one: no wait, 200 late.
  gpu_.Begin();
  Add(1, theirs);
  v1::DeviceStep late;
  gpu_.Fill(1, 0, 1000, {}, 0, &late);
  EXPECT_EQ(late.wait_ns(), 0);
  EXPECT_EQ(late.lateness_ns(), 200);
  EXPECT_EQ(late.top_kernels(0).op_class(), v1::OPERATOR_CLASS_GPU_COLLECTIVE);
}

TEST_F(GpuStepSummarizerTest, IdleIsSplitBySyncThenDataWaitThenLaunchBound) {
  gpu_.Begin();
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 300, 400, 1, 250));
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 700, 800, 2, 650));
  // Window [0, 1000): idle [0, 300), [400, 700), [800, 1000).
  const IntervalSet data_wait = Set({{0, 100}});
  const IntervalSet operators = Set({{100, 650}, {800, 900}});
  const IntervalSet syncs = Set({{50, 150}, {900, 950}});
  v1::DeviceStep d;
  gpu_.Fill(0, 0, 1000, GpuStepSummarizer::Host{&operators, &syncs, &data_wait}, 0, &d);
  EXPECT_EQ(d.idle_ns(), 300 + 300 + 200);
  EXPECT_EQ(d.gpu_idle_host_sync_ns(), 100 + 50);
  EXPECT_EQ(d.gpu_idle_data_wait_ns(), 50);  // [0, 50): [50, 100) was the sync's
  // In operators, neither syncing nor waiting: [150, 300), [400, 650), [800, 900).
  EXPECT_EQ(d.gpu_idle_launch_bound_ns(), 150 + 250 + 100);
}

TEST_F(GpuStepSummarizerTest, WorkSpilledFromTheLastStepIsNotIdle) {
  gpu_.Begin();
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 800, 1300, 1, 700));  // runs past 1000
  v1::DeviceStep first;
  gpu_.Fill(0, 0, 1000, {}, 0, &first);
  EXPECT_EQ(first.gpu_busy_ns(), 500);  // not clipped: this step launched it
  EXPECT_EQ(first.idle_ns(), 800);

  gpu_.Begin();
  Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 1300, 1500, 2, 1100));
  v1::DeviceStep second;
  gpu_.Fill(0, 1000, 2000, {}, 0, &second);
  EXPECT_EQ(second.gpu_busy_ns(), 200);
  EXPECT_EQ(second.idle_ns(), 500);  // [1500, 2000); [1000, 1300) ran the last step's kernel

  // Another rank's spill-over is its own.
  gpu_.Begin();
  Add(1, Gpu(v1::EVENT_KIND_GPU_KERNEL, gemm_, 7, 1300, 1500, 3, 1100));
  v1::DeviceStep other;
  gpu_.Fill(1, 1000, 2000, {}, 0, &other);
  EXPECT_EQ(other.idle_ns(), 800);
}

TEST_F(GpuStepSummarizerTest, TopKernelsAreTheTenLongestByTotal) {
  gpu_.Begin();
  for (int i = 0; i < 12; ++i) {
    const uint32_t name = strings_.Intern("k" + std::to_string(i));
    Add(0, Gpu(v1::EVENT_KIND_GPU_KERNEL, name, 7, i * 100, i * 100 + 10 + i, i + 1, 0));
  }
  v1::DeviceStep d;
  gpu_.Fill(0, 0, 2000, {}, 0, &d);
  ASSERT_EQ(d.top_kernels_size(), 10);
  EXPECT_EQ(d.top_kernels(0).name(), "k11");
  EXPECT_EQ(d.top_kernels(9).name(), "k2");
  EXPECT_EQ(d.kernels(), 12u);
}

}  // namespace
}  // namespace trainscope::collector

#include "trainscope/collector/analysis/device_step_summarizer.h"

#include <vector>

#include "analysis/synthetic_events.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using testing::Collective;
using testing::FixedOffsetClock;
using testing::Op;

class DeviceStepSummarizerTest : public ::testing::Test {
 protected:
  DeviceStepSummarizerTest() {
    groups_.set_world_size(2);
    clock_.set_offset(0, 1000);  // rank 0's clock is 1 us behind the reference
  }

  // Rank 0's step 5 from its marks at 0 and 1000 (its clock).
  static DeviceStepBuffer Marked() {
    DeviceStepBuffer b;
    b.has_start = true;
    b.start_raw_ns = 0;
    b.ended = true;
    b.end_raw_ns = 1000;
    return b;
  }

  JobStrings strings_;
  GroupDirectory groups_{&strings_};
  FixedOffsetClock clock_;
  CollectiveMatcher matcher_{&groups_, &clock_, [] { return 2u; }};
  DeviceStepSummarizer summarizer_{&clock_, &matcher_};
  const uint32_t mm_ = strings_.Intern("aten::mm");
  const uint32_t world_ = strings_.Intern("default_pg");
};

TEST_F(DeviceStepSummarizerTest, SplitsTheStepIntoComputeCommunicationAndIdle) {
  DeviceStepBuffer b = Marked();
  b.events.push_back(Op(mm_, 100, 400, 1, v1::OPERATOR_SCOPE_FORWARD));
  b.events.back().group_sequence = 3000;                                  // its FLOPs
  b.events.push_back(Op(mm_, 150, 300, 1, v1::OPERATOR_SCOPE_BACKWARD));  // nested: counts once
  const DeviceEvent mine =
      Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, mm_, world_, 1, 500, 700, 4096);
  b.events.push_back(mine);
  b.flops = 3000;
  b.peak_memory = 77;
  matcher_.NoteArrival(0, mine, 5);
  // Rank 1 (no offset) arrives at 1600 on the reference clock: 100 after rank 0.
  matcher_.NoteArrival(
      1, Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, mm_, world_, 1, 1600, 1700, 4096), 5);

  v1::DeviceStep d;
  std::vector<OperatorRecord> ops;
  CollectiveMatcher::Links links;
  summarizer_.Summarize(0, 2, 5, b, &d, &ops, &links);

  EXPECT_EQ(d.step(), 5u);
  EXPECT_EQ(d.rank(), 0u);
  EXPECT_EQ(d.stage(), 2u);
  EXPECT_EQ(d.start_ns(), 1000);
  EXPECT_EQ(d.end_ns(), 2000);
  EXPECT_EQ(d.step_time_ns(), 1000);
  EXPECT_EQ(d.data_wait_ns(), 100);  // before its first operator
  EXPECT_EQ(d.compute_ns(), 300);
  EXPECT_EQ(d.forward_ns(), 300);
  EXPECT_EQ(d.backward_ns(), 150);
  EXPECT_EQ(d.collective_ns(), 200);
  EXPECT_EQ(d.wait_ns(), 100);
  EXPECT_EQ(d.transfer_ns(), 100);
  EXPECT_EQ(d.waited_for_rank(), 1);
  EXPECT_EQ(d.idle_ns(), 500);
  EXPECT_EQ(d.flops(), 3000u);
  EXPECT_DOUBLE_EQ(d.flops_per_second(), 3000 * 1e9 / 300);
  EXPECT_EQ(d.peak_memory_bytes(), 77u);
  EXPECT_EQ(d.operators(), 2u);
  EXPECT_EQ(d.collectives(), 1u);
  EXPECT_TRUE(d.complete());
  EXPECT_EQ(links.size(), 2u);

  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].start_ns, 1100);  // on the reference clock
  EXPECT_EQ(ops[0].raw_start_ns, 100);
  EXPECT_EQ(ops[0].flops, 3000u);
  EXPECT_EQ(ops[0].stage, 2u);
  EXPECT_EQ(ops[2].op_class, v1::OPERATOR_CLASS_COLLECTIVE);
  EXPECT_EQ(ops[2].bytes, 4096u);
}

TEST_F(DeviceStepSummarizerTest, GpuEventsBecomeStreamOperatorsOfTheirClass) {
  DeviceStepBuffer b = Marked();
  b.events.push_back(Op(mm_, 100, 400, 1, v1::OPERATOR_SCOPE_FORWARD));
  DeviceEvent kernel;
  kernel.kind = v1::EVENT_KIND_GPU_KERNEL;
  kernel.name = strings_.Intern("sm90_gemm");
  kernel.start_ns = 150;
  kernel.end_ns = 350;
  kernel.thread = 9;  // a decoder's stray thread is not the stream
  kernel.gpu_device = 1;
  kernel.gpu_stream = 7;
  kernel.correlation = 42;
  kernel.launch_op = mm_;
  kernel.value = 5000;
  b.events.push_back(kernel);
  DeviceEvent nccl = kernel;
  nccl.kind = v1::EVENT_KIND_GPU_COLLECTIVE;
  nccl.gpu_stream = 20;
  nccl.group = world_;
  nccl.group_sequence = 3;
  nccl.value = 4096;
  b.events.push_back(nccl);
  DeviceEvent copy = kernel;
  copy.kind = v1::EVENT_KIND_GPU_MEMCPY;
  copy.gpu_stream = 9;
  b.events.push_back(copy);
  v1::DeviceStep d;
  std::vector<OperatorRecord> ops;
  CollectiveMatcher::Links links;
  summarizer_.Summarize(0, 0, 5, b, &d, &ops, &links);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[1].op_class, v1::OPERATOR_CLASS_GPU_KERNEL);
  EXPECT_EQ(ops[1].thread, 0u);
  EXPECT_EQ(ops[1].gpu_device, 1u);
  EXPECT_EQ(ops[1].gpu_stream, 7u);
  EXPECT_EQ(ops[1].correlation, 42u);
  EXPECT_EQ(ops[1].launch_op, mm_);
  EXPECT_EQ(ops[1].flops, 5000u);
  EXPECT_EQ(ops[1].start_ns, 1150);  // on the reference clock
  EXPECT_EQ(ops[2].op_class, v1::OPERATOR_CLASS_GPU_COLLECTIVE);
  EXPECT_EQ(ops[2].gpu_stream, 20u);
  EXPECT_EQ(ops[2].group, world_);
  EXPECT_EQ(ops[2].group_sequence, 3u);
  EXPECT_EQ(ops[2].bytes, 4096u);
  EXPECT_EQ(ops[3].op_class, v1::OPERATOR_CLASS_GPU_COPY);
  // The host's figures stay in cpu_*: one CPU operator, no collective;
  // compute_ns is device time (the kernel), see GpuStepSummarizer.
  EXPECT_EQ(d.cpu_compute_ns(), 300);
  EXPECT_EQ(d.compute_ns(), 200);
  EXPECT_EQ(d.collectives(), 0u);
}

TEST_F(DeviceStepSummarizerTest, PhasesOverrideWhatOperatorsSuggest) {
  DeviceStepBuffer b = Marked();
  b.events.push_back(Op(mm_, 100, 400, 1, v1::OPERATOR_SCOPE_FORWARD));
  b.phase_ns[v1::PHASE_DATA_WAIT] = 40;
  b.phase_seen[v1::PHASE_DATA_WAIT] = true;
  b.phase_ns[v1::PHASE_FORWARD] = 250;
  b.phase_seen[v1::PHASE_FORWARD] = true;
  b.phase_ns[v1::PHASE_OPTIMIZER] = 60;
  v1::DeviceStep d;
  std::vector<OperatorRecord> ops;
  CollectiveMatcher::Links links;
  summarizer_.Summarize(0, 0, 5, b, &d, &ops, &links);
  EXPECT_EQ(d.data_wait_ns(), 40);
  EXPECT_EQ(d.forward_ns(), 250);
  EXPECT_EQ(d.optimizer_ns(), 60);
  EXPECT_EQ(d.waited_for_rank(), -1);
}

TEST_F(DeviceStepSummarizerTest, AnUnendedStepSpansItsOperators) {
  DeviceStepBuffer b;  // no marks: events before the device's first mark, say
  b.events.push_back(Op(mm_, 300, 500));
  b.events.push_back(Op(mm_, 100, 200));
  v1::DeviceStep d;
  std::vector<OperatorRecord> ops;
  CollectiveMatcher::Links links;
  summarizer_.Summarize(0, 0, 4, b, &d, &ops, &links);
  EXPECT_EQ(d.start_ns(), 1100);
  EXPECT_EQ(d.end_ns(), 1500);
  EXPECT_EQ(d.data_wait_ns(), 0);
  EXPECT_EQ(d.idle_ns(), 100);
  EXPECT_FALSE(d.complete());
}

TEST(DeviceStepSummarizerCoveredTest, CountsTheUnionOnce) {
  using Interval = DeviceStepSummarizer::Interval;
  std::vector<Interval> sorted_by_end = {{150, 300}, {100, 400}, {500, 600}};
  EXPECT_EQ(DeviceStepSummarizer::Covered(sorted_by_end), 400);
  std::vector<Interval> unsorted = {{500, 600}, {100, 400}, {350, 450}};
  EXPECT_EQ(DeviceStepSummarizer::Covered(unsorted), 450);
  std::vector<Interval> none;
  EXPECT_EQ(DeviceStepSummarizer::Covered(none), 0);
}

}  // namespace
}  // namespace trainscope::collector

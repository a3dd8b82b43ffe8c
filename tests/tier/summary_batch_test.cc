#include "trainscope/tier/summary_batch.h"

#include "gtest/gtest.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::tier {
namespace {

// Appends one event; collective and GPU columns when its kind has them.
void Add(v1::EventBatch& b, v1::EventKind kind, int64_t delta, uint32_t name, uint64_t value,
         uint32_t group = 0, uint64_t group_sequence = 0, uint32_t gpu_stream = 0) {
  b.add_kind(kind);
  b.add_start_delta_ns(delta);
  b.add_duration_ns(10);
  b.add_name(name);
  b.add_thread(1);
  b.add_detail(0);
  b.add_value(value);
  if (protocol::IsCollectiveKind(kind)) {
    b.add_group(group);
    b.add_group_sequence(group_sequence);
    b.add_peer(-1);
  }
  if (protocol::IsGpuKind(kind)) {
    b.add_gpu_device(0);
    b.add_gpu_stream(gpu_stream);
    b.add_gpu_correlation(5);
    b.add_gpu_launch_delta_ns(-3);
    b.add_gpu_launch_op(name);
  }
}

TEST(SummaryBatchTest, KeepsStepMarksAndCollectivesWithTheirTimesAndColumns) {
  v1::EventBatch b;
  b.set_sequence(9);
  b.set_base_time_ns(1000);
  for (const char* s : {"aten::mm", "step", "allreduce", "pg0", "nccl:all_reduce", "kernel"}) {
    b.add_strings(s);
  }
  Add(b, v1::EVENT_KIND_OPERATOR, 5, 0, 0);                     // t=1005, dropped
  Add(b, v1::EVENT_KIND_STEP_MARK, 10, 1, 4);                   // t=1015
  Add(b, v1::EVENT_KIND_GPU_KERNEL, 3, 5, 0, 0, 0, 7);          // t=1018, dropped
  Add(b, v1::EVENT_KIND_COLLECTIVE, 7, 2, 4096, 3, 11);         // t=1025
  Add(b, v1::EVENT_KIND_GPU_COLLECTIVE, 5, 4, 4096, 3, 12, 9);  // t=1030
  b.add_loss_reports()->set_iteration(4);
  b.mutable_drops()->set_ring_full(2);

  v1::EventBatch s = SummaryBatch(b);
  ASSERT_TRUE(protocol::CheckEventBatchColumns(s).ok())
      << protocol::CheckEventBatchColumns(s).message();
  EXPECT_EQ(s.sequence(), 9u);
  ASSERT_EQ(s.kind_size(), 3);
  EXPECT_EQ(s.kind(0), v1::EVENT_KIND_STEP_MARK);
  EXPECT_EQ(s.kind(1), v1::EVENT_KIND_COLLECTIVE);
  EXPECT_EQ(s.kind(2), v1::EVENT_KIND_GPU_COLLECTIVE);
  // Absolute start times survive the dropped events between them.
  int64_t t = s.base_time_ns();
  std::vector<int64_t> starts;
  for (int i = 0; i < s.kind_size(); ++i) starts.push_back(t += s.start_delta_ns(i));
  EXPECT_EQ(starts, (std::vector<int64_t>{1015, 1025, 1030}));
  // Names and groups point into the compacted table.
  EXPECT_EQ(s.strings(s.name(0)), "step");
  EXPECT_EQ(s.strings(s.name(1)), "allreduce");
  EXPECT_EQ(s.strings(s.group(0)), "pg0");
  EXPECT_EQ(s.group_sequence(1), 12u);
  EXPECT_EQ(s.strings_size(), 4);  // step, allreduce, pg0, nccl:all_reduce
  ASSERT_EQ(s.gpu_stream_size(), 1);
  EXPECT_EQ(s.gpu_stream(0), 9u);
  EXPECT_EQ(s.strings(s.gpu_launch_op(0)), "nccl:all_reduce");
  EXPECT_EQ(s.value(0), 4u);
  EXPECT_EQ(s.loss_reports_size(), 1);
  EXPECT_EQ(s.drops().ring_full(), 2u);
}

TEST(SummaryBatchTest, ABatchOfOperatorsOnlyKeepsItsSequenceAndReports) {
  v1::EventBatch b;
  b.set_sequence(3);
  b.add_strings("op");
  Add(b, v1::EVENT_KIND_OPERATOR, 1, 0, 0);
  b.add_loss_reports()->set_iteration(1);
  v1::EventBatch s = SummaryBatch(b);
  EXPECT_EQ(s.sequence(), 3u);
  EXPECT_EQ(s.kind_size(), 0);
  EXPECT_EQ(s.strings_size(), 0);
  EXPECT_EQ(s.loss_reports_size(), 1);
}

}  // namespace
}  // namespace trainscope::tier

#include "trainscope/proto/event_batch_columns.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::protocol {
namespace {

// Two events, the second a collective, every column filled.
v1::EventBatch TwoEvents() {
  v1::EventBatch batch;
  batch.add_strings("op");
  for (int kind : {v1::EVENT_KIND_OPERATOR, v1::EVENT_KIND_COLLECTIVE}) {
    batch.add_kind(static_cast<v1::EventKind>(kind));
    batch.add_start_delta_ns(10);
    batch.add_duration_ns(5);
    batch.add_name(0);
    batch.add_thread(1);
    batch.add_detail(0);
    batch.add_value(0);
  }
  batch.add_group(0);
  batch.add_group_sequence(1);
  batch.add_peer(-1);
  return batch;
}

TEST(EventBatchColumnsTest, AcceptsAConsistentBatchAndCountsCollectives) {
  const v1::EventBatch batch = TwoEvents();
  EXPECT_TRUE(CheckEventBatchColumns(batch).ok());
  EXPECT_EQ(CountCollectives(batch), 1);
  EXPECT_TRUE(CheckEventBatchColumns(v1::EventBatch()).ok());
}

TEST(EventBatchColumnsTest, NamesAShortPerEventColumn) {
  v1::EventBatch batch = TwoEvents();
  batch.mutable_thread()->RemoveLast();
  std::string bad;
  const absl::Status s = CheckEventBatchColumns(batch, "column ", &bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "column thread has 1 entries, expected 2 (one per event)");
  EXPECT_EQ(bad, "thread");
}

TEST(EventBatchColumnsTest, NamesACollectiveColumnWithTheWrongLength) {
  v1::EventBatch batch = TwoEvents();
  batch.add_peer(3);  // two peers for one collective
  const absl::Status s = CheckEventBatchColumns(batch, "EventBatch.");
  EXPECT_EQ(s.message(), "EventBatch.peer has 2 entries, expected 1 (one per collective event)");
}

// A GPU kernel, then an NCCL kernel: two GPU events, one of them a collective.
v1::EventBatch TwoGpuEvents() {
  v1::EventBatch batch;
  batch.add_strings("k");
  for (v1::EventKind kind : {v1::EVENT_KIND_GPU_KERNEL, v1::EVENT_KIND_GPU_COLLECTIVE}) {
    batch.add_kind(kind);
    batch.add_start_delta_ns(10);
    batch.add_duration_ns(5);
    batch.add_name(0);
    batch.add_thread(0);
    batch.add_detail(0);
    batch.add_value(0);
    batch.add_gpu_device(0);
    batch.add_gpu_stream(7);
    batch.add_gpu_correlation(1);
    batch.add_gpu_launch_delta_ns(-3);
    batch.add_gpu_launch_op(0);
  }
  batch.add_group(0);
  batch.add_group_sequence(1);
  batch.add_peer(-1);
  return batch;
}

TEST(EventBatchColumnsTest, GpuCollectivesHaveCollectiveAndGpuColumns) {
  const v1::EventBatch batch = TwoGpuEvents();
  EXPECT_TRUE(CheckEventBatchColumns(batch).ok());
  EXPECT_EQ(CountCollectives(batch), 1);
  EXPECT_EQ(CountGpuEvents(batch), 2);
  EXPECT_EQ(CountGpuEvents(TwoEvents()), 0);
}

TEST(EventBatchColumnsTest, NamesAGpuColumnWithTheWrongLength) {
  v1::EventBatch batch = TwoGpuEvents();
  batch.mutable_gpu_stream()->RemoveLast();
  std::string bad;
  const absl::Status s = CheckEventBatchColumns(batch, "EventBatch.", &bad);
  EXPECT_EQ(s.message(), "EventBatch.gpu_stream has 1 entries, expected 2 (one per GPU event)");
  EXPECT_EQ(bad, "gpu_stream");
}

}  // namespace
}  // namespace trainscope::protocol

#include "batch_splitter.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batch_encoder.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::agent {
namespace {

// A batch of `n` events of every column family (operators, CPU collectives,
// GPU kernels and collectives), interleaved threads (negative deltas) and
// many distinct names, so pieces need their own string tables.
v1::EventBatch MixedBatch(StringTable* table, int n) {
  BatchEncoder encoder;
  const StringId group = table->Intern("default_pg");
  for (int i = 0; i < n; ++i) {
    const StringId name = table->Intern(absl::StrCat("op_", i % 97, std::string(40, 'x')));
    const int64_t start = 1'000'000 + i * 1000 - (i % 3) * 1500;
    if (i % 5 == 0) {
      GpuEventRecord gpu;
      gpu.event.kind = i % 10 == 0 ? EventKind::kGpuCollective : EventKind::kGpuKernel;
      gpu.event.name = name;
      gpu.event.group = group;
      gpu.event.aux = static_cast<uint64_t>(i);
      gpu.event.peer = -1;
      gpu.event.start_ns = start;
      gpu.event.end_ns = start + 700;
      gpu.device = 1;
      gpu.stream = 7 + static_cast<uint32_t>(i % 2);
      gpu.correlation = static_cast<uint64_t>(i) + 1;
      gpu.launch_delta_ns = -200;
      gpu.launch_op = table->Intern(absl::StrCat("launcher_", i % 13));
      encoder.AddGpu(gpu);
      continue;
    }
    EventRecord record;
    record.kind = i % 7 == 0 ? EventKind::kCollective : EventKind::kOperator;
    record.name = name;
    record.group = group;
    record.aux = static_cast<uint64_t>(i);
    record.peer = i % 4;
    record.start_ns = start;
    record.end_ns = start + 500;
    record.value = static_cast<uint64_t>(i);
    encoder.Add(record, 10 + static_cast<uint32_t>(i % 3));
  }
  v1::DropCounters drops;
  drops.set_ring_full(3);
  v1::EventBatch batch = encoder.Finish(*table, drops);
  batch.set_sequence(42);
  v1::LossReport* report = batch.add_loss_reports();
  report->set_iteration(9);
  return batch;
}

TEST(BatchSplitterTest, PiecesFitTheLimitAndDecodeToTheSameEvents) {
  StringTable table(512, 100000);
  const v1::EventBatch batch = MixedBatch(&table, 3000);
  constexpr uint64_t kLimit = 8 << 10;
  ASSERT_GT(batch.ByteSizeLong(), 4 * kLimit);

  const BatchSplit split = SplitBatch(batch, kLimit);
  EXPECT_EQ(split.events_too_large, 0u);
  ASSERT_GT(split.batches.size(), 4u);
  std::vector<DecodedEvent> joined;
  int loss_reports = 0;
  for (const v1::EventBatch& piece : split.batches) {
    EXPECT_LE(piece.ByteSizeLong(), kLimit);
    EXPECT_EQ(piece.strings(0), "");
    EXPECT_EQ(piece.drops().ring_full(), 3u);
    EXPECT_EQ(piece.sequence(), 42u);
    loss_reports += piece.loss_reports_size();
    auto decoded = DecodeEventBatch(piece);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    joined.insert(joined.end(), decoded->begin(), decoded->end());
  }
  EXPECT_EQ(loss_reports, 1);
  EXPECT_EQ(split.batches.front().loss_reports_size(), 1);
  auto whole = DecodeEventBatch(batch);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(joined.size(), whole->size());
  for (size_t i = 0; i < joined.size(); ++i) ASSERT_EQ(joined[i], (*whole)[i]) << "event " << i;
}

TEST(BatchSplitterTest, ABatchUnderTheLimitIsKeptWhole) {
  StringTable table(512, 1000);
  const v1::EventBatch batch = MixedBatch(&table, 20);
  const BatchSplit split = SplitBatch(batch, batch.ByteSizeLong());
  ASSERT_EQ(split.batches.size(), 1u);
  EXPECT_EQ(split.batches[0].SerializeAsString(), batch.SerializeAsString());
}

TEST(BatchSplitterTest, AnEventThatCannotFitAloneIsCountedNotSent) {
  StringTable table(512, 1000);
  BatchEncoder encoder;
  for (int i = 0; i < 3; ++i) {
    EventRecord record;
    record.kind = EventKind::kOperator;
    // The middle event's name alone is over the limit.
    record.name = table.Intern(i == 1 ? std::string(500, 'n') : absl::StrCat("small_", i));
    record.start_ns = 1000 * (i + 1);
    record.end_ns = record.start_ns + 10;
    encoder.Add(record, 1);
  }
  const v1::EventBatch batch = encoder.Finish(table, v1::DropCounters());
  const BatchSplit split = SplitBatch(batch, 300);
  EXPECT_EQ(split.events_too_large, 1u);
  std::vector<std::string> names;
  for (const v1::EventBatch& piece : split.batches) {
    EXPECT_LE(piece.ByteSizeLong(), 300u);
    auto decoded = DecodeEventBatch(piece);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    for (const DecodedEvent& event : *decoded) names.push_back(event.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"small_0", "small_2"}));
}

}  // namespace
}  // namespace trainscope::agent

#include "batch_encoder.h"

#include <vector>

#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::agent {
namespace {

EventRecord Operator(StringId name, int64_t start, int64_t end, uint64_t seq, OperatorScope scope) {
  EventRecord r;
  r.kind = EventKind::kOperator;
  r.name = name;
  r.start_ns = start;
  r.end_ns = end;
  r.value = seq;
  r.detail = static_cast<uint16_t>(scope);
  return r;
}

EventRecord Collective(StringId name, StringId group, uint64_t group_seq, uint64_t bytes,
                       int32_t peer, int64_t start, int64_t end) {
  EventRecord r;
  r.kind = EventKind::kCollective;
  r.name = name;
  r.group = group;
  r.aux = group_seq;
  r.value = bytes;
  r.peer = peer;
  r.start_ns = start;
  r.end_ns = end;
  r.detail = static_cast<uint16_t>(CollectiveKind::kAllReduce);
  return r;
}

TEST(BatchEncoderTest, RoundTripsEveryKindWithItsOwnStrings) {
  StringTable table(512, 1000);
  const StringId conv = table.Intern("aten::conv2d");
  const StringId allreduce = table.Intern("all_reduce");
  const StringId pg = table.Intern("default_pg");
  const StringId mem = table.Intern("memory_allocated");
  table.Intern("never_used");

  BatchEncoder encoder;
  encoder.Add(Operator(conv, 1000, 1500, 7, OperatorScope::kForward), 11);
  encoder.Add(Collective(allreduce, pg, 3, 4 << 20, -1, 1600, 2600), 11);
  // Another thread's event that started earlier: a negative delta.
  encoder.Add(Operator(conv, 900, 950, 8, OperatorScope::kBackward), 22);
  EventRecord step;
  step.kind = EventKind::kStepMark;
  step.start_ns = step.end_ns = 3000;
  step.value = 4;
  encoder.Add(step, 11);
  EventRecord counter;
  counter.kind = EventKind::kCounter;
  counter.name = mem;
  counter.start_ns = counter.end_ns = 3100;
  counter.value = 123456789;
  encoder.Add(counter, 11);
  EventRecord phase;
  phase.kind = EventKind::kPhaseMark;
  phase.start_ns = 1000;
  phase.end_ns = 2000;
  phase.value = 4;
  phase.detail = static_cast<uint16_t>(Phase::kForward);
  encoder.Add(phase, 11);
  EXPECT_EQ(encoder.events(), 6u);

  v1::DropCounters drops;
  drops.set_ring_full(5);
  const v1::EventBatch batch = encoder.Finish(table, drops);
  EXPECT_EQ(encoder.events(), 0u);
  EXPECT_EQ(batch.drops().ring_full(), 5u);
  EXPECT_EQ(batch.base_time_ns(), 1000);
  EXPECT_EQ(batch.start_delta_ns(2), 900 - 1600);
  // Only the strings this batch uses, "" first.
  ASSERT_EQ(batch.strings_size(), 5);
  EXPECT_EQ(batch.strings(0), "");
  EXPECT_EQ(batch.group_size(), 1);
  EXPECT_EQ(batch.peer_size(), 1);

  auto decoded = DecodeEventBatch(batch);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), 6u);
  const auto& d = *decoded;
  EXPECT_EQ(d[0].kind, EventKind::kOperator);
  EXPECT_EQ(d[0].name, "aten::conv2d");
  EXPECT_EQ(d[0].start_ns, 1000);
  EXPECT_EQ(d[0].end_ns, 1500);
  EXPECT_EQ(d[0].value, 7u);
  EXPECT_EQ(d[0].detail, 1u);
  EXPECT_EQ(d[0].thread, 11u);
  EXPECT_EQ(d[1].kind, EventKind::kCollective);
  EXPECT_EQ(d[1].name, "all_reduce");
  EXPECT_EQ(d[1].group, "default_pg");
  EXPECT_EQ(d[1].group_sequence, 3u);
  EXPECT_EQ(d[1].value, 4u << 20);
  EXPECT_EQ(d[1].peer, -1);
  EXPECT_EQ(d[1].end_ns, 2600);
  EXPECT_EQ(d[2].start_ns, 900);
  EXPECT_EQ(d[2].thread, 22u);
  EXPECT_EQ(d[2].detail, 2u);
  EXPECT_EQ(d[3].kind, EventKind::kStepMark);
  EXPECT_EQ(d[3].start_ns, 3000);
  EXPECT_EQ(d[3].end_ns, 3000);
  EXPECT_EQ(d[3].name, "");
  EXPECT_EQ(d[4].name, "memory_allocated");
  EXPECT_EQ(d[4].value, 123456789u);
  EXPECT_EQ(d[5].kind, EventKind::kPhaseMark);
  EXPECT_EQ(d[5].detail, 2u);
  EXPECT_EQ(d[5].end_ns - d[5].start_ns, 1000);
}

TEST(BatchEncoderTest, EachBatchHasItsOwnStringTable) {
  StringTable table(512, 1000);
  const StringId a = table.Intern("a");
  const StringId b = table.Intern("b");
  BatchEncoder encoder;
  encoder.Add(Operator(a, 1, 2, 0, OperatorScope::kForward), 1);
  const v1::EventBatch first = encoder.Finish(table, {});
  encoder.Add(Operator(b, 1, 2, 0, OperatorScope::kForward), 1);
  encoder.Add(Operator(b, 3, 4, 0, OperatorScope::kForward), 1);
  const v1::EventBatch second = encoder.Finish(table, {});
  ASSERT_EQ(second.strings_size(), 2);
  EXPECT_EQ(second.strings(1), "b");
  EXPECT_EQ(second.name(0), 1u);
  EXPECT_EQ(second.name(1), 1u);
  EXPECT_EQ(second.base_time_ns(), 1);
  auto decoded = DecodeEventBatch(first);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ((*decoded)[0].name, "a");
}

TEST(BatchEncoderTest, EndBeforeStartGivesZeroDuration) {
  StringTable table(512, 10);
  BatchEncoder encoder;
  encoder.Add(Operator(0, 100, 50, 0, OperatorScope::kForward), 1);
  EXPECT_EQ(encoder.Finish(table, {}).duration_ns(0), 0u);
}

// FinishEncoded writes the wire format itself: its bytes must be exactly
// what protobuf writes for the same batch, built here field by field with
// protobuf's own setters (extreme values: varints of every length, zigzag
// columns negative and positive, every column family).
TEST(BatchEncoderTest, WireFormatIsProtobufsOwn) {
  StringTable table(512, 1000);
  const StringId op = table.Intern("aten::mm");
  const StringId pg = table.Intern("pg");
  const StringId launcher = table.Intern("aten::linear");
  BatchEncoder encoder;
  const int64_t base = -5'000'000'000;  // a negative base: a 10-byte varint
  encoder.Add(Operator(op, base, base + 1, ~0ull >> 1, OperatorScope::kBackward), 0xffffffffu);
  encoder.Add(Collective(op, pg, ~0ull, 1, -2147483647 - 1, base - 7, base + 100), 3);
  encoder.Add(Collective(op, pg, 0, 0, 2147483647, base + 1'000'000'000'000, base), 3);
  GpuEventRecord kernel;
  kernel.event.kind = EventKind::kGpuKernel;
  kernel.event.name = op;
  kernel.event.start_ns = base + 50;
  kernel.event.end_ns = base + 60;
  kernel.device = 7;
  kernel.stream = 0xffffffffu;
  kernel.correlation = 123456789012345ull;
  kernel.launch_delta_ns = -999'999'999'999;
  kernel.launch_op = launcher;
  encoder.AddGpu(kernel);
  v1::DropCounters drops;
  drops.set_ring_full(1);
  drops.set_buffer_full(1ull << 40);
  const EncodedBatch wire = encoder.FinishEncoded(table, drops);
  EXPECT_EQ(wire.events, 4u);

  v1::EventBatch expected;
  for (const char* s : {"", "aten::mm", "pg", "aten::linear"}) expected.add_strings(s);
  expected.set_base_time_ns(base);
  const v1::EventKind kinds[] = {v1::EVENT_KIND_OPERATOR, v1::EVENT_KIND_COLLECTIVE,
                                 v1::EVENT_KIND_COLLECTIVE, v1::EVENT_KIND_GPU_KERNEL};
  const int64_t deltas[] = {0, -7, 1'000'000'000'007, -1'000'000'000'000 + 50};
  const uint64_t durations[] = {1, 107, 0, 10};
  const uint32_t threads[] = {0xffffffffu, 3, 3, 0};
  const uint32_t details[] = {2, static_cast<uint32_t>(CollectiveKind::kAllReduce),
                              static_cast<uint32_t>(CollectiveKind::kAllReduce), 0};
  const uint64_t values[] = {~0ull >> 1, 1, 0, 0};
  for (int i = 0; i < 4; ++i) {
    expected.add_kind(kinds[i]);
    expected.add_start_delta_ns(deltas[i]);
    expected.add_duration_ns(durations[i]);
    expected.add_name(1);
    expected.add_thread(threads[i]);
    expected.add_detail(details[i]);
    expected.add_value(values[i]);
  }
  expected.add_group(2);
  expected.add_group_sequence(~0ull);
  expected.add_peer(-2147483647 - 1);
  expected.add_group(2);
  expected.add_group_sequence(0);
  expected.add_peer(2147483647);
  *expected.mutable_drops() = drops;
  expected.add_gpu_device(7);
  expected.add_gpu_stream(0xffffffffu);
  expected.add_gpu_correlation(123456789012345ull);
  expected.add_gpu_launch_delta_ns(-999'999'999'999);
  expected.add_gpu_launch_op(3);
  EXPECT_EQ(wire.bytes, expected.SerializeAsString());

  // Empty batches too (no columns at all, zero base left out), and the
  // encoder is ready for the next one.
  EXPECT_EQ(encoder.FinishEncoded(table, {}).bytes, [] {
    v1::EventBatch empty;
    empty.add_strings("");
    empty.mutable_drops();
    return empty.SerializeAsString();
  }());
}

TEST(EventBatchDecoderTest, NamesTheBadColumn) {
  StringTable table(512, 10);
  BatchEncoder encoder;
  encoder.Add(Collective(0, 0, 1, 2, 3, 4, 5), 1);
  v1::EventBatch batch = encoder.Finish(table, {});

  v1::EventBatch short_value = batch;
  short_value.clear_value();
  auto status = DecodeEventBatch(short_value).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("EventBatch.value"), std::string::npos) << status;

  v1::EventBatch bad_group = batch;
  bad_group.set_group(0, 9);
  status = DecodeEventBatch(bad_group).status();
  EXPECT_NE(status.message().find("EventBatch.group[0]"), std::string::npos) << status;

  v1::EventBatch extra_peer = batch;
  extra_peer.add_peer(1);
  status = DecodeEventBatch(extra_peer).status();
  EXPECT_NE(status.message().find("EventBatch.peer"), std::string::npos) << status;
}

}  // namespace
}  // namespace trainscope::agent

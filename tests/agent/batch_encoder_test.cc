#include "batch_encoder.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/event_batch_decoder.h"
#include "trainscope/collector/ingest/batch_validator.h"

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

// The drainer's path (AddOperator, columns written as each event is added):
// thousands of operators (the columns grow several times) on three threads
// whose runs alternate (the thread's cached varint re-encoded each time),
// names with global ids far above their batch indices, varints of every
// length. The bytes must be protobuf's own for the same batch, the
// collector's validator must take them, and they must decode to the input;
// then the same again for a second batch from the reused encoder.
TEST(BatchEncoderTest, OperatorsAddedInRunsRoundTripThroughTheCollector) {
  StringTable table(1 << 20, 100'000);
  std::vector<StringId> names;
  for (int i = 0; i < 3000; ++i) {
    const StringId id = table.Intern(absl::StrCat("op", i));
    if (i % 10 == 9) names.push_back(id);  // ids 10, 20, ... 3000
  }
  const uint32_t threads[] = {0, 1'234'567, std::numeric_limits<uint32_t>::max()};
  BatchEncoder encoder;
  for (int round = 0; round < 2; ++round) {
    struct Op {
      int64_t start, end;
      StringId name;
      uint64_t value;
      uint16_t detail;
      uint32_t thread;
    };
    std::vector<Op> ops;
    // The first start is 0 in round 0 (base_time_ns left out, as protobuf does).
    int64_t t = round == 0 ? 0 : 1'000'000'000'000'000'000;
    uint64_t state = 12345 + round;
    const auto next = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 33;
    };
    int64_t last_end_by_thread[3] = {t, t, t};
    for (int i = 0; i < 5000; ++i) {
      Op op;
      op.thread = threads[(i / 7) % 3];  // runs of 7 events per thread
      op.start = t;
      const uint64_t width = next() % 6;  // durations of 1 to 8 varint bytes
      op.end = t + static_cast<int64_t>(next() % (uint64_t{1} << (width * 9)));
      // Completions in order per thread, as the collector wants (starts may go back).
      int64_t& last_end = last_end_by_thread[(i / 7) % 3];
      op.end = std::max(op.end, last_end);
      last_end = op.end;
      op.name = i % 11 == 0 ? kEmptyString : names[next() % names.size()];
      op.value = i == 1 ? std::numeric_limits<uint64_t>::max() : next() << (next() % 31);
      op.detail = static_cast<uint16_t>(next() % 4);
      ops.push_back(op);
      // Starts go back (another thread's earlier event) now and then.
      t += static_cast<int64_t>(next() % 3'000'000) - (i % 5 == 0 ? 1'500'000 : 0);
    }
    for (const Op& op : ops) {
      encoder.AddOperator(op.start, op.end, op.name, op.value, op.detail, op.thread);
    }
    ASSERT_EQ(encoder.events(), ops.size());
    const EncodedBatch wire = encoder.FinishEncoded(table, v1::DropCounters());
    EXPECT_EQ(wire.events, ops.size());
    EXPECT_EQ(encoder.events(), 0u);

    v1::EventBatch expected;
    expected.add_strings("");
    std::vector<StringId> batch_ids = {kEmptyString};
    const auto index_of = [&](StringId id) -> uint32_t {
      for (size_t k = 0; k < batch_ids.size(); ++k) {
        if (batch_ids[k] == id) return static_cast<uint32_t>(k);
      }
      batch_ids.push_back(id);
      std::string text;
      table.Visit({id}, [&](std::string_view view) { text = std::string(view); });
      expected.add_strings(text);
      return static_cast<uint32_t>(batch_ids.size() - 1);
    };
    expected.set_base_time_ns(ops.front().start);
    int64_t previous = ops.front().start;
    for (const Op& op : ops) {
      expected.add_kind(v1::EVENT_KIND_OPERATOR);
      expected.add_start_delta_ns(op.start - previous);
      previous = op.start;
      expected.add_duration_ns(static_cast<uint64_t>(op.end - op.start));
      expected.add_name(index_of(op.name));
      expected.add_thread(op.thread);
      expected.add_detail(op.detail);
      expected.add_value(op.value);
    }
    expected.mutable_drops();
    ASSERT_EQ(wire.bytes, expected.SerializeAsString()) << "round " << round;

    v1::EventBatch parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire.bytes));
    parsed.set_sequence(1);
    collector::BatchValidator validator(/*world_size=*/1);
    const absl::Status valid = validator.Validate(parsed);
    ASSERT_TRUE(valid.ok()) << valid;
    auto decoded = DecodeEventBatch(parsed);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_EQ(decoded->size(), ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const DecodedEvent& d = (*decoded)[i];
      ASSERT_EQ(d.start_ns, ops[i].start) << i;
      ASSERT_EQ(d.end_ns, ops[i].end) << i;
      ASSERT_EQ(d.thread, ops[i].thread) << i;
      ASSERT_EQ(d.value, ops[i].value) << i;
      ASSERT_EQ(d.detail, ops[i].detail) << i;
      std::string name;
      table.Visit({ops[i].name}, [&](std::string_view view) { name = std::string(view); });
      ASSERT_EQ(d.name, name) << i;
    }
  }
}

// AddOperator is Add for a kOperator: the same bytes for extreme times
// (zero, the int64 ends, wrapping deltas, ends before starts), the largest
// name id, detail and value, with and without a clock perturbation; and
// protobuf's own bytes for them.
TEST(BatchEncoderTest, AddOperatorWritesWhatAddWritesForExtremeValues) {
  StringTable table(512, 1000);
  const StringId last = table.Intern("last");  // the largest id in the table
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<std::pair<int64_t, int64_t>> extreme = {
      {0, 0}, {kMax - 1, kMax}, {kMin, kMax}, {kMin, kMin}, {-1, 0}, {5, 4}, {kMax, kMin}, {0, 1}};
  // Perturbed times stay clear of the int64 ends (the perturbation would overflow).
  const std::vector<std::pair<int64_t, int64_t>> ordinary = {
      {100, 200}, {1'000'000'000'000, 1'000'000'005'000}, {50, 40}, {-7, 7}};
  for (const bool perturbed : {false, true}) {
    const auto& times = perturbed ? ordinary : extreme;
    BatchEncoder fast;
    BatchEncoder general;
    if (perturbed) {
      const ClockPerturbation perturbation(/*offset_ns=*/3'000, /*drift_ppm=*/50, /*origin_ns=*/0);
      fast.set_clock_perturbation(perturbation);
      general.set_clock_perturbation(perturbation);
    }
    for (const auto& [start, end] : times) {
      fast.AddOperator(start, end, last, ~0ull, 0xffff, 0xffffffffu);
      general.Add(Operator(last, start, end, ~0ull, static_cast<OperatorScope>(0xffff)),
                  0xffffffffu);
    }
    const std::string bytes = fast.FinishEncoded(table, {}).bytes;
    EXPECT_EQ(bytes, general.FinishEncoded(table, {}).bytes) << "perturbed " << perturbed;
    if (perturbed) continue;
    v1::EventBatch expected;
    expected.add_strings("");
    expected.add_strings("last");
    int64_t previous = 0;
    for (const auto& [start, end] : times) {
      expected.add_kind(v1::EVENT_KIND_OPERATOR);
      // Deltas and durations wrap, as the encoder's do.
      expected.add_start_delta_ns(
          static_cast<int64_t>(static_cast<uint64_t>(start) - static_cast<uint64_t>(previous)));
      previous = start;
      expected.add_duration_ns(
          end > start ? static_cast<uint64_t>(end) - static_cast<uint64_t>(start) : 0);
      expected.add_name(1);
      expected.add_thread(0xffffffffu);
      expected.add_detail(0xffff);
      expected.add_value(~0ull);
    }
    expected.mutable_drops();
    EXPECT_EQ(bytes, expected.SerializeAsString());
  }
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

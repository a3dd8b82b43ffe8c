#include "trainscope/collector/ingest/batch_validator.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;
using testing::MakeBatch;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// A valid batch with one collective event (index 1) among operators.
v1::EventBatch WithCollective(uint64_t sequence) {
  v1::EventBatch batch = MakeBatch(sequence, 3);
  batch.add_strings("world");
  batch.set_kind(1, v1::EVENT_KIND_COLLECTIVE);
  batch.set_detail(1, v1::COLLECTIVE_KIND_ALL_REDUCE);
  batch.add_group(1);
  batch.add_group_sequence(1);
  batch.add_peer(-1);
  return batch;
}

TEST(BatchValidatorTest, AcceptsValidBatches) {
  BatchValidator validator(4);
  EXPECT_TRUE(validator.Validate(MakeBatch(1)).ok());
  EXPECT_TRUE(validator.Validate(WithCollective(2)).ok());
}

TEST(BatchValidatorTest, EachCommonColumnMustHaveOneEntryPerEvent) {
  using Mutator = void (*)(v1::EventBatch*);
  const std::pair<std::string, Mutator> cases[] = {
      {"start_delta_ns", [](v1::EventBatch* b) { b->mutable_start_delta_ns()->RemoveLast(); }},
      {"duration_ns", [](v1::EventBatch* b) { b->mutable_duration_ns()->RemoveLast(); }},
      {"name", [](v1::EventBatch* b) { b->mutable_name()->RemoveLast(); }},
      {"thread", [](v1::EventBatch* b) { b->mutable_thread()->RemoveLast(); }},
      {"detail", [](v1::EventBatch* b) { b->mutable_detail()->RemoveLast(); }},
      {"value", [](v1::EventBatch* b) { b->mutable_value()->RemoveLast(); }},
  };
  for (const auto& [column, mutate] : cases) {
    BatchValidator validator(4);
    v1::EventBatch batch = MakeBatch(12, 100);
    mutate(&batch);
    absl::Status s = validator.Validate(batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << column;
    EXPECT_EQ(Message(s),
              "batch 12: column " + column + " has 99 entries, expected 100 (one per event)");
    EXPECT_EQ(BadInputCause(s), "batch." + column);
  }
}

TEST(BatchValidatorTest, EachCollectiveColumnMustHaveOneEntryPerCollectiveEvent) {
  using Mutator = void (*)(v1::EventBatch*);
  const std::pair<std::string, Mutator> cases[] = {
      {"group", [](v1::EventBatch* b) { b->add_group(0); }},
      {"group_sequence", [](v1::EventBatch* b) { b->clear_group_sequence(); }},
      {"peer", [](v1::EventBatch* b) { b->add_peer(0); }},
  };
  for (const auto& [column, mutate] : cases) {
    BatchValidator validator(4);
    v1::EventBatch batch = WithCollective(3);
    mutate(&batch);
    absl::Status s = validator.Validate(batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << column;
    EXPECT_THAT(Message(s), HasSubstr("column " + column + " has "));
    EXPECT_THAT(Message(s), HasSubstr("expected 1 (one per collective event)"));
  }
}

TEST(BatchValidatorTest, StringIndexOutOfRange) {
  BatchValidator validator(4);
  v1::EventBatch batch = MakeBatch(5);
  batch.set_name(2, 9);
  absl::Status s = validator.Validate(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s), "batch 5: event 2 has name index 9, out of range; the batch has 1 strings");

  v1::EventBatch collective = WithCollective(6);
  collective.set_group(0, 5);
  s = validator.Validate(collective);
  EXPECT_THAT(Message(s), HasSubstr("group index 5, out of range"));
}

TEST(BatchValidatorTest, OversizedString) {
  BatchLimits limits;
  limits.max_string_bytes = 16;
  BatchValidator validator(4, limits);
  v1::EventBatch batch = MakeBatch(1);
  batch.add_strings(std::string(17, 's'));
  absl::Status s = validator.Validate(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("strings[1] is 17 bytes; at most 16"));
}

TEST(BatchValidatorTest, UnknownKindAndDetail) {
  BatchValidator validator(4);
  v1::EventBatch batch = MakeBatch(1);
  batch.set_kind(1, static_cast<v1::EventKind>(42));
  absl::Status s = validator.Validate(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("event 1 has kind 42; expected 1 to 7"));

  batch = MakeBatch(1);
  batch.set_kind(0, v1::EVENT_KIND_UNSPECIFIED);
  EXPECT_THAT(Message(validator.Validate(batch)), HasSubstr("event 0 has kind 0"));

  batch = WithCollective(1);
  batch.set_detail(1, 99);
  EXPECT_THAT(Message(validator.Validate(batch)),
              HasSubstr("has detail 99; expected a trainscope.v1.CollectiveKind"));
}

TEST(BatchValidatorTest, PeerMustBeBelowWorldSize) {
  BatchValidator validator(4);
  v1::EventBatch batch = WithCollective(1);
  batch.set_peer(0, 4);
  absl::Status s = validator.Validate(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("has peer 4; expected -1 (none) or a rank below 4"));
}

TEST(BatchValidatorTest, DurationOfADayOrMore) {
  BatchValidator validator(4);
  v1::EventBatch batch = MakeBatch(1);
  batch.set_duration_ns(0, 86'400'000'000'000ull);
  absl::Status s = validator.Validate(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("event 0 lasts 86400000000000 ns; expected less than"));
}

TEST(BatchValidatorTest, NoEventsOrTooManyEvents) {
  BatchLimits limits;
  limits.max_events = 10;
  BatchValidator validator(4, limits);
  v1::EventBatch empty;
  empty.set_sequence(3);
  absl::Status s = validator.Validate(empty);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s), "batch 3: has no events and no loss reports; expected 1 to 10 events");
  // Loss reports may travel alone.
  empty.add_loss_reports()->set_top_n(4);
  EXPECT_TRUE(validator.Validate(empty).ok());
  s = validator.Validate(MakeBatch(4, 11));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s), "batch 4: has 11 events; at most 10 per batch");
  EXPECT_TRUE(validator.Validate(MakeBatch(5, 10)).ok());
}

TEST(BatchValidatorTest, TimestampsBackwardsWithinAThreadAcrossBatches) {
  BatchValidator validator(4);
  // Batch 1 on thread 4711: events end at 2000 + 0..20 + 5, the last at 2025.
  ASSERT_TRUE(validator.Validate(MakeBatch(1, 3, 4711, 2000)).ok());
  int64_t last = 0;
  ASSERT_TRUE(validator.LastTime(4711, &last));
  EXPECT_EQ(last, 2025);
  // Another thread may be earlier: order is per thread.
  EXPECT_TRUE(validator.Validate(MakeBatch(2, 3, 99, 10)).ok());
  // Batch 3 goes back in time on thread 4711.
  absl::Status s = validator.Validate(MakeBatch(3, 3, 4711, 995));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "batch 3: event 0 on thread 4711 ends at 1000 ns, before that thread's previous event "
            "(2025 ns); timestamps must not go backwards within a thread");
  EXPECT_EQ(BadInputCause(s), "batch.timestamps");
  // The refused batch changed nothing: the stream continues from 2025.
  ASSERT_TRUE(validator.LastTime(4711, &last));
  EXPECT_EQ(last, 2025);
  EXPECT_TRUE(validator.Validate(MakeBatch(4, 3, 4711, 2020)).ok());
}

TEST(BatchValidatorTest, TimestampsBackwardsWithinOneBatch) {
  BatchValidator validator(4);
  v1::EventBatch batch = MakeBatch(1, 3, 7, 5000);
  batch.set_start_delta_ns(2, -100);
  absl::Status s = validator.Validate(batch);
  EXPECT_THAT(Message(s), HasSubstr("event 2 on thread 7 ends at 4915 ns"));
}

TEST(BatchValidatorTest, PhaseMarksMayCloseASpanAfterLaterEvents) {
  BatchValidator validator(4);
  v1::EventBatch batch = MakeBatch(1, 3, 7, 5000);  // ends at 5005, 5015, 5025
  // The forward phase (4000..5010) is recorded after the third operator.
  batch.add_kind(v1::EVENT_KIND_PHASE_MARK);
  batch.add_start_delta_ns(4000 - 5020);
  batch.add_duration_ns(1010);
  batch.add_name(0);
  batch.add_thread(7);
  batch.add_detail(v1::PHASE_FORWARD);
  batch.add_value(1);
  EXPECT_TRUE(validator.Validate(batch).ok());
  int64_t last = 0;
  ASSERT_TRUE(validator.LastTime(7, &last));
  EXPECT_EQ(last, 5025);  // the phase mark does not move the thread's clock
}

TEST(BatchValidatorTest, GpuRuntimeCallsMayArriveAfterLaterEventsOfTheirThread) {
  BatchValidator validator(4);
  ASSERT_TRUE(validator.Validate(MakeBatch(1, 3, 7, 5000)).ok());  // thread 7 up to 5025
  // The GPU tracer delivers a runtime call made inside the first operator.
  v1::EventBatch late = MakeBatch(2, 0, 7, 0);
  late.set_base_time_ns(5001);
  late.add_kind(v1::EVENT_KIND_GPU_RUNTIME);
  late.add_start_delta_ns(0);
  late.add_duration_ns(2);
  late.add_name(0);
  late.add_thread(7);
  late.add_detail(v1::RUNTIME_CALL_LAUNCH);
  late.add_value(42);
  EXPECT_TRUE(validator.Validate(late).ok());
  int64_t last = 0;
  ASSERT_TRUE(validator.LastTime(7, &last));
  EXPECT_EQ(last, 5025);
  // An operator going backwards is still refused.
  v1::EventBatch backwards = MakeBatch(3, 1, 7, 4000);
  EXPECT_FALSE(validator.Validate(backwards).ok());
}

TEST(BatchValidatorTest, TimeOverflowIsRefused) {
  BatchValidator validator(4);
  v1::EventBatch batch = MakeBatch(1, 2, 7, std::numeric_limits<int64_t>::max() - 5);
  absl::Status s = validator.Validate(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("overflows"));
}

}  // namespace
}  // namespace trainscope::collector

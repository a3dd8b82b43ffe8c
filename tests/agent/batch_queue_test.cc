#include "batch_queue.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batch_encoder.h"
#include "batch_splitter.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::agent {
namespace {

constexpr uint64_t kNoBound = ~0ull;

// `n` operators named name_0 .. name_{n-1} (each 60 bytes), starting at `first`.
EncodedBatch Operators(StringTable* table, int n, int first = 0) {
  BatchEncoder encoder;
  for (int i = first; i < first + n; ++i) {
    EventRecord record;
    record.kind = EventKind::kOperator;
    record.name = table->Intern(absl::StrCat("name_", i, std::string(52, 'x')));
    record.start_ns = 1000 + i * 10;
    record.end_ns = record.start_ns + 5;
    record.value = static_cast<uint64_t>(i);
    encoder.Add(record, 1);
  }
  return encoder.FinishEncoded(*table, v1::DropCounters());
}

v1::AgentMessage Parse(const std::string& bytes) {
  v1::AgentMessage message;
  EXPECT_TRUE(message.ParseFromString(bytes));
  return message;
}

// Writes everything unsent; returns the messages, parsed.
std::vector<v1::AgentMessage> SendAll(BatchQueue* queue) {
  std::vector<v1::AgentMessage> sent;
  while (const std::string* message = queue->NextToSend()) {
    sent.push_back(Parse(*message));
    queue->MarkSent();
  }
  return sent;
}

// The values (operator index) of every event in `messages`, in order.
std::vector<uint64_t> Values(const std::vector<v1::AgentMessage>& messages) {
  std::vector<uint64_t> values;
  for (const v1::AgentMessage& message : messages) {
    auto events = DecodeEventBatch(message.batch());
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) continue;
    for (const DecodedEvent& event : *events) values.push_back(event.value);
  }
  return values;
}

TEST(BatchQueueTest, NumbersBatchesAndFramesThemAsAgentMessages) {
  StringTable table(512, 1000);
  BatchQueue queue(1 << 20);
  ASSERT_TRUE(queue.Push(Operators(&table, 3), kNoBound).all_queued);
  ASSERT_TRUE(queue.Push(Operators(&table, 2, 3), kNoBound).all_queued);
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.unacknowledged_events(), 5u);
  EXPECT_GT(queue.bytes(), 0u);
  const std::vector<v1::AgentMessage> sent = SendAll(&queue);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].batch().sequence(), 1u);
  EXPECT_EQ(sent[1].batch().sequence(), 2u);
  EXPECT_EQ(Values(sent), (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(queue.NextToSend(), nullptr);
}

TEST(BatchQueueTest, AcknowledgeAndRefuseKeepTheSendCursorAndCount) {
  StringTable table(512, 1000);
  BatchQueue queue(1 << 20);
  for (int i = 0; i < 4; ++i) queue.Push(Operators(&table, 1 + i, 10 * i), kNoBound);
  queue.MarkSent();
  queue.MarkSent();  // batches 1 and 2 written
  queue.Acknowledge(1);
  ASSERT_NE(queue.NextToSend(), nullptr);
  EXPECT_EQ(Parse(*queue.NextToSend()).batch().sequence(), 3u);
  EXPECT_EQ(queue.Refuse(2), std::optional<uint64_t>(2));
  EXPECT_EQ(queue.Refuse(2), std::nullopt);   // gone already
  EXPECT_EQ(queue.Refuse(99), std::nullopt);  // never queued
  EXPECT_EQ(Parse(*queue.NextToSend()).batch().sequence(), 3u);
  queue.RewindSends();  // a new stream: everything unacknowledged again
  const std::vector<v1::AgentMessage> sent = SendAll(&queue);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].batch().sequence(), 3u);
  EXPECT_EQ(sent[1].batch().sequence(), 4u);
  queue.Acknowledge(4);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.bytes(), 0u);
  const BatchQueue::Counters c = queue.counters();
  EXPECT_EQ(c.events_acked, 1u + 3u + 4u);
  EXPECT_EQ(c.batches_acked, 3u);
  EXPECT_EQ(c.events_refused, 2u);
  EXPECT_EQ(c.dropped_buffer_full, 0u);
}

TEST(BatchQueueTest, TheMemoryBoundRefusesAndCountsWholeBatches) {
  StringTable table(512, 1000);
  BatchQueue queue(1 << 20);
  ASSERT_TRUE(queue.Push(Operators(&table, 10), kNoBound).all_queued);
  const uint64_t bound = queue.bytes() + 100;  // room for no second batch of that size
  const BatchQueue::PushResult refused = queue.Push(Operators(&table, 10, 10), bound);
  EXPECT_FALSE(refused.all_queued);
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue.counters().dropped_buffer_full, 10u);
  // The next number is not spent on a refused batch: no gap for the collector.
  ASSERT_TRUE(queue.Push(Operators(&table, 1, 20), kNoBound).all_queued);
  const std::vector<v1::AgentMessage> sent = SendAll(&queue);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].batch().sequence(), 2u);

  v1::EventBatch reports;
  reports.add_loss_reports()->set_iteration(3);
  EXPECT_FALSE(queue.PushWhole(reports, queue.bytes()));
  EXPECT_TRUE(queue.PushWhole(reports, kNoBound));
  ASSERT_NE(queue.NextToSend(), nullptr);
  const v1::AgentMessage whole = Parse(*queue.NextToSend());
  EXPECT_EQ(whole.batch().sequence(), 3u);
  EXPECT_EQ(whole.batch().loss_reports(0).iteration(), 3u);
}

TEST(BatchQueueTest, BatchesOverTheMessageLimitAreCutEachUnderIt) {
  StringTable table(512, 1000);
  const uint64_t limit = 1000;
  BatchQueue queue(limit);
  const BatchQueue::PushResult result = queue.Push(Operators(&table, 100), kNoBound);
  EXPECT_TRUE(result.all_queued);
  EXPECT_EQ(result.events_too_large, 0u);
  EXPECT_GT(queue.size(), 5u);
  std::vector<v1::AgentMessage> sent;
  uint64_t sequence = 0;
  while (const std::string* message = queue.NextToSend()) {
    EXPECT_LE(message->size(), limit);
    sent.push_back(Parse(*message));
    EXPECT_EQ(sent.back().batch().sequence(), ++sequence);
    queue.MarkSent();
  }
  std::vector<uint64_t> expected(100);
  for (uint64_t i = 0; i < 100; ++i) expected[i] = i;
  EXPECT_EQ(Values(sent), expected);
}

TEST(BatchQueueTest, ASmallerLimitCutsQueuedBatchesAndRenumbersThem) {
  StringTable table(512, 1000);
  BatchQueue queue(1 << 20);
  queue.Push(Operators(&table, 3), kNoBound);  // 1, acknowledged below
  queue.Push(Operators(&table, 50, 3), kNoBound);
  queue.Push(Operators(&table, 50, 53), kNoBound);
  queue.Acknowledge(1);
  queue.MarkSent();
  EXPECT_EQ(queue.SetMessageLimit(0), 0u);  // unchanged: nothing cut
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.SetMessageLimit(1000), 0u);
  EXPECT_GT(queue.size(), 4u);
  EXPECT_EQ(queue.max_message_bytes(), 1000u);
  // Resent from the start, numbered on from the first queued one.
  std::vector<v1::AgentMessage> sent;
  uint64_t sequence = 1;
  while (const std::string* message = queue.NextToSend()) {
    EXPECT_LE(message->size(), 1000u);
    sent.push_back(Parse(*message));
    EXPECT_EQ(sent.back().batch().sequence(), ++sequence);
    queue.MarkSent();
  }
  std::vector<uint64_t> expected;
  for (uint64_t i = 3; i < 103; ++i) expected.push_back(i);
  EXPECT_EQ(Values(sent), expected);
  EXPECT_EQ(queue.unacknowledged_events(), 100u);
}

TEST(BatchQueueTest, AnEventLargerThanTheLimitIsDroppedAndCounted) {
  StringTable table(512, 1000);
  BatchQueue queue(1 << 20);
  BatchEncoder encoder;
  EventRecord big;
  big.kind = EventKind::kOperator;
  big.name = table.Intern(std::string(500, 'b'));
  big.start_ns = 1;
  big.end_ns = 2;
  encoder.Add(big, 1);
  EventRecord small = big;
  small.name = table.Intern("s");
  small.value = 7;
  encoder.Add(small, 1);
  queue.SetMessageLimit(300);
  const BatchQueue::PushResult result =
      queue.Push(encoder.FinishEncoded(table, v1::DropCounters()), kNoBound);
  EXPECT_EQ(result.events_too_large, 1u);
  EXPECT_EQ(queue.counters().dropped_buffer_full, 1u);
  const std::vector<v1::AgentMessage> sent = SendAll(&queue);
  EXPECT_EQ(Values(sent), (std::vector<uint64_t>{7}));
}

}  // namespace
}  // namespace trainscope::agent

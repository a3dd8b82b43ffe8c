#include "ring_drainer.h"

#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::agent {
namespace {

class RingDrainerTest : public ::testing::Test {
 protected:
  RingDrainerTest() : strings_(512, 1000), rings_(/*agent_serial=*/1, 1024, 64 << 20) {
    options_.max_batch_events = 100;
    options_.memory_budget_bytes = 64 << 20;
    options_.flush_interval = absl::Milliseconds(64);
    name_ = strings_.Intern("aten::add");
  }

  // `n` operators on a new ring of thread `tid`, values first, first + 1, ...
  std::shared_ptr<ThreadRing> Ring(uint32_t tid, int n, uint64_t first) {
    std::shared_ptr<ThreadRing> ring = rings_.CreateRing(tid);
    for (int i = 0; i < n; ++i) {
      EventRecord record;
      record.kind = EventKind::kOperator;
      record.name = name_;
      record.start_ns = 1000 + i;
      record.end_ns = 1001 + i;
      record.value = first + static_cast<uint64_t>(i);
      ring->Push(record);
    }
    return ring;
  }

  // Drains into decoded batches; `accept` batches are taken, the rest refused.
  std::vector<std::vector<DecodedEvent>> Drain(RingDrainer* drainer, int accept = 1 << 30) {
    std::vector<std::vector<DecodedEvent>> batches;
    uint64_t queued = 0;
    drainer->Drain([&] { return queued; }, [] { return v1::DropCounters(); },
                   [&](EncodedBatch batch, uint64_t bound) {
                     EXPECT_GT(bound, 0u);
                     if (static_cast<int>(batches.size()) >= accept) return false;
                     v1::EventBatch parsed;
                     EXPECT_TRUE(parsed.ParseFromString(batch.bytes));
                     auto events = DecodeEventBatch(parsed);
                     EXPECT_TRUE(events.ok()) << events.status();
                     EXPECT_EQ(batch.events, events->size());
                     queued += batch.bytes.size();
                     batches.push_back(*events);
                     return true;
                   });
    return batches;
  }

  AgentOptions options_;
  StringTable strings_;
  RingRegistry rings_;
  StringId name_;
};

TEST_F(RingDrainerTest, DrainsEveryRingInBatchesOfAtMostMaxBatchEvents) {
  auto a = Ring(11, 150, 0);
  auto b = Ring(22, 70, 1000);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  const auto batches = Drain(&drainer);
  std::map<uint32_t, std::vector<uint64_t>> by_thread;
  size_t total = 0;
  for (const auto& batch : batches) {
    EXPECT_LE(batch.size(), 100u);
    total += batch.size();
    for (const DecodedEvent& event : batch) by_thread[event.thread].push_back(event.value);
  }
  EXPECT_EQ(total, 220u);
  ASSERT_EQ(by_thread[11].size(), 150u);
  ASSERT_EQ(by_thread[22].size(), 70u);
  for (size_t i = 0; i < 150; ++i) EXPECT_EQ(by_thread[11][i], i);  // in order per thread
  for (size_t i = 0; i < 70; ++i) EXPECT_EQ(by_thread[22][i], 1000 + i);
  EXPECT_EQ(a->ring().size(), 0u);
  EXPECT_EQ(b->ring().size(), 0u);
}

TEST_F(RingDrainerTest, ARefusedBatchStopsTheDrainAndLaterRecordsStayInTheRings) {
  auto a = Ring(11, 250, 0);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  const auto batches = Drain(&drainer, /*accept=*/1);
  ASSERT_EQ(batches.size(), 1u);
  // The refused batch's 100 records left the ring (the queue counts them as
  // buffer_full); the rest wait for the next drain.
  EXPECT_EQ(a->ring().size(), 50u);
  EXPECT_EQ(Drain(&drainer).size(), 1u);
  EXPECT_EQ(a->ring().size(), 0u);
}

TEST_F(RingDrainerTest, AtTheMemoryBoundRecordsStayInTheRings) {
  options_.memory_budget_bytes = 1;  // less than the rings hold already
  auto a = Ring(11, 10, 0);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  EXPECT_TRUE(Drain(&drainer).empty());
  EXPECT_EQ(a->ring().size(), 10u);
}

TEST_F(RingDrainerTest, TheFlushIntervalFollowsHowFullTheRingsAre) {
  auto a = Ring(11, 0, 0);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  EXPECT_EQ(drainer.flush_interval(), absl::Milliseconds(64));
  const size_t capacity = a->ring().capacity();
  ASSERT_GT(capacity, 0u);
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < capacity * 3 / 4; ++i) a->Push(EventRecord{});
    Drain(&drainer);
  }
  EXPECT_EQ(drainer.flush_interval(), absl::Milliseconds(8));
  for (int round = 0; round < 10; ++round) {
    a->Push(EventRecord{});
    Drain(&drainer);
  }
  EXPECT_EQ(drainer.flush_interval(), absl::Milliseconds(64));  // never above the options'
}

}  // namespace
}  // namespace trainscope::agent
